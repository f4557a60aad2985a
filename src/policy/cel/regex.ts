// A JSON Schema `pattern` (ECMAScript, as ajv runs it: `new RegExp(p, 'u')`, `.test()`)
// → the RE2 regex CEL's `matches()` runs, only where both mean the same. A conservative
// scanner, not a translator: ASCII only; literals, classes, groups, alternation,
// quantifiers, anchors and the ASCII escapes both engines read alike. The one rewrite:
// `.` outside a class, which ECMAScript never lets match \n, \r, U+2028 or U+2029 but RE2
// lets match all but \n, becomes the class of what ECMAScript's `.` matches.
// Refused (the rule stays on the webhook): lookarounds and backreferences (RE2 has
// none), named groups, `\s` (ECMAScript's includes Unicode spaces and \v, RE2's does not),
// `\uXXXX`/`\p{…}`/`\cX`/`\0` escapes, and any non-ASCII or control character.

const DOT = '[^\\n\\r\\x{2028}\\x{2029}]';
/** Escapes meaning the same in both engines (outside and inside classes). */
const SAME_ESCAPES = new Set(['d', 'D', 'w', 'W', 'n', 't', 'r', 'f']);
const SAME_ESCAPES_OUTSIDE = new Set(['b', 'B']);
const SYNTAX = new Set([...'^$\\.*+?()[]{}|/-']);

/** The RE2 form of `pattern`, or why it has none with the same meaning. */
export function re2Pattern(pattern: string): { re2: string } | { reason: string } {
  const refuse = (why: string) => ({
    reason: `pattern ${JSON.stringify(pattern)}: ${why} has no RE2 form with the same meaning`,
  });
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    const code = c.charCodeAt(0);
    if (code < 0x20 || code > 0x7e) return refuse('a non-ASCII or control character');
    if (c === '\\') {
      const e = pattern[i + 1];
      if (e === undefined) return refuse('a trailing backslash');
      i++;
      if (/\d/.test(e) || e === 'k') return refuse('a backreference');
      if (e === 's' || e === 'S') return refuse('\\s (Unicode spaces in ECMAScript)');
      if (SAME_ESCAPES.has(e) || (!inClass && SAME_ESCAPES_OUTSIDE.has(e)) || SYNTAX.has(e)) {
        out += `\\${e}`;
        continue;
      }
      return refuse(`the escape \\${e}`);
    }
    if (inClass) {
      if (c === '[') return refuse('"[" inside a class');
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      // `[]` and `[^]` mean "nothing"/"anything" in ECMAScript, a literal `]` in RE2.
      if (pattern[i + 1] === ']' || pattern.startsWith('^]', i + 1))
        return refuse('an empty class');
      continue;
    }
    if (c === '(' && pattern[i + 1] === '?') {
      if (pattern[i + 2] === ':') {
        out += '(?:';
        i += 2;
        continue;
      }
      return refuse('a lookaround or named group');
    }
    out += c === '.' ? DOT : c;
  }
  if (inClass) return refuse('an unclosed class');
  return { re2: out };
}
