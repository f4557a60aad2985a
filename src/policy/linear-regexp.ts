// The regular-expression engine behind every JSON Schema `pattern` and
// `patternProperties` in a policy. ECMAScript's backtracking engine can take exponential
// time on a pattern such as `^(a+)+$` and a value of thirty a's and a "!": the object's
// author picks the value, and one such review would block annex's only thread (every
// webhook with it) long past the API server's deadline. So:
// - RE2 (re2js), linear in the input, runs every pattern it can express: where the
//   pattern has an RE2 form with ECMAScript's meaning (cel/regex.ts, the form CEL's
//   matches() gets too), that form; otherwise RE2 syntax, as the API server reads a
//   CRD's `pattern` (Go regexp), with Kubernetes' own differences (`\s` is ASCII).
// - Lookarounds and backreferences (`(?!latest$)`), which no linear engine has, stay on
//   ECMAScript's engine, bounded twice: such a pattern with a quantified group that
//   itself repeats or alternates (the exponential shapes) does not compile, and a value
//   longer than BACKTRACKING_MAX_INPUT is not matched but makes the rule fail (its
//   policy's failurePolicy decides), which keeps the remaining polynomial cases small.
import { RE2JS } from 're2js';
import { re2Pattern } from './cel/regex.js';

/** The longest string a backtracking-only pattern is run on. */
export const BACKTRACKING_MAX_INPUT = 1024;

interface RegExpLike {
  test(s: string): boolean;
  /** ajv keys its compiled patterns by this: it must tell patterns apart, as RegExp's does. */
  toString(): string;
}

function compileLinear(pattern: string): RegExpLike {
  const same = re2Pattern(pattern);
  let re: RE2JS;
  try {
    re = RE2JS.compile('re2' in same ? same.re2 : RE2JS.translateRegExp(pattern));
  } catch {
    return compileBounded(pattern);
  }
  return { test: (s) => re.test(s), toString: () => `re2:${pattern}` };
}

function compileBounded(pattern: string): RegExpLike {
  const shape = exponentialShape(pattern);
  if (shape) {
    throw new Error(
      `pattern ${JSON.stringify(pattern)} needs a backtracking engine (lookaround or backreference) and repeats ${shape}, which can take exponential time; rewrite it without one or the other`,
    );
  }
  const re = new RegExp(pattern, 'u');
  return {
    test(s) {
      if (s.length > BACKTRACKING_MAX_INPUT) {
        throw new Error(
          `value of ${s.length} characters is longer than the ${BACKTRACKING_MAX_INPUT} a lookaround or backreference pattern is matched against`,
        );
      }
      return re.test(s);
    },
    toString: () => `backtracking:${pattern}`,
  };
}

/**
 * A group that is repeated without bound (`*`, `+`, `{n,}`, `{n,m}` with m > 1) and
 * contains a quantifier or an alternation: described, or undefined when there is none.
 */
export function exponentialShape(pattern: string): string | undefined {
  const groups: { inner: boolean }[] = [];
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') groups.push({ inner: false });
    else if (c === '|') {
      if (groups.length) groups[groups.length - 1]!.inner = true;
    } else if (c === ')') {
      const g = groups.pop();
      const repeats = repeatsAt(pattern, i + 1);
      if (g?.inner && repeats) return `a group with a quantifier or "|" inside (…)${repeats}`;
      if (g?.inner || repeats) markOuter(groups);
    } else if (repeatsAt(pattern, i) || c === '?') markOuter(groups);
  }
  return undefined;
}

function markOuter(groups: { inner: boolean }[]): void {
  if (groups.length) groups[groups.length - 1]!.inner = true;
}

/** The unbounded-repeat quantifier starting at `i` (`*`, `+`, `{2,}`, `{1,5}`), or ''. */
function repeatsAt(pattern: string, i: number): string {
  const c = pattern[i];
  if (c === '*' || c === '+') return c;
  if (c !== '{') return '';
  const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i));
  if (!m || m[2] === undefined) return '';
  return m[3] === '' || Number(m[3]) > 1 ? m[0] : '';
}

/** ajv's `code.regExp` engine: `(pattern, flags) => { test }`; the `u` flag is RE2's default. */
export const linearRegExp = Object.assign(
  (pattern: string, _flags: string) => compileLinear(pattern),
  { code: 'linearRegExp' },
);
