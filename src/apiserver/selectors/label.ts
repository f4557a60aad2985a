// labelSelector: the grammar and error texts of apimachinery's labels.Parse
// (pkg/labels/selector.go), because kubectl users read those messages verbatim.
//   requirement ::= [!] KEY [ ("in"|"notin") "(" VALUES ")" | ("="|"=="|"!="|">"|"<") VALUE ]
// A comma means AND; `!=` and `notin` also match objects without the key.
import { badRequest } from '../../core/status.js';
import { invalidValue, labelValueErrors, qualifiedNameErrors } from './validation.js';

export type LabelOperator = 'in' | 'notin' | '=' | '==' | '!=' | 'gt' | 'lt' | 'exists' | '!';

export interface LabelRequirement {
  key: string;
  operator: LabelOperator;
  /** Sorted and de-duplicated, as apimachinery's sets.String.List() gives them. */
  values: string[];
}

export interface LabelSelector {
  requirements: LabelRequirement[];
  matches(labels: Record<string, string> | undefined): boolean;
  /** The value a selector pins `key` to (`k=v`, `k==v`, `k in (v)`), if any. */
  requiresExactMatch(key: string): string | undefined;
  empty: boolean;
}

type Tok =
  'error' | 'end' | ')' | ',' | '!' | '==' | '=' | '>' | 'id' | 'in' | '<' | '!=' | 'notin' | '(';

const SYMBOL_TOKENS: Record<string, Tok> = {
  ')': ')',
  ',': ',',
  '!': '!',
  '==': '==',
  '=': '=',
  '>': '>',
  '<': '<',
  '!=': '!=',
  '(': '(',
};
const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

const isWhitespace = (c: string) => c === ' ' || c === '\t' || c === '\r' || c === '\n';
const isSpecial = (c: string) => '=!(),><'.includes(c);

interface Item {
  tok: Tok;
  lit: string;
}

function lex(s: string): Item[] {
  const items: Item[] = [];
  let pos = 0;
  for (;;) {
    while (pos < s.length && isWhitespace(s[pos]!)) pos++;
    if (pos >= s.length) {
      items.push({ tok: 'end', lit: '' });
      return items;
    }
    if (isSpecial(s[pos]!)) {
      // Longest run of special characters that is still a known operator.
      let buf = '';
      let last: Item | undefined;
      while (pos < s.length && isSpecial(s[pos]!)) {
        buf += s[pos]!;
        const t = SYMBOL_TOKENS[buf];
        if (t) {
          last = { tok: t, lit: buf };
          pos++;
        } else if (last) {
          break;
        } else {
          pos++;
        }
      }
      items.push(last ?? { tok: 'error', lit: `error expected: keyword found '${buf}'` });
      continue;
    }
    let buf = '';
    while (pos < s.length && !isSpecial(s[pos]!) && !isWhitespace(s[pos]!)) buf += s[pos++]!;
    items.push({ tok: buf === 'in' ? 'in' : buf === 'notin' ? 'notin' : 'id', lit: buf });
  }
}

class Parser {
  private pos = 0;
  constructor(private readonly items: Item[]) {}

  /** In value position, the keywords `in`/`notin` are plain identifiers. */
  private look(values: boolean): Item {
    const it = this.items[this.pos]!;
    return values && (it.tok === 'in' || it.tok === 'notin') ? { tok: 'id', lit: it.lit } : it;
  }
  private take(values: boolean): Item {
    const it = this.look(values);
    this.pos++;
    return it;
  }

  parse(): LabelRequirement[] {
    const reqs: LabelRequirement[] = [];
    for (;;) {
      const { tok, lit } = this.look(true);
      if (tok === 'id' || tok === '!') {
        let r: LabelRequirement;
        try {
          r = this.requirement();
        } catch (e) {
          throw new Error(`unable to parse requirement: ${(e as Error).message}`);
        }
        reqs.push(r);
        const next = this.take(true);
        if (next.tok === 'end') return reqs;
        if (next.tok === ',') {
          const after = this.look(true);
          if (after.tok !== 'id' && after.tok !== '!') {
            throw new Error(`found '${after.lit}', expected: identifier after ','`);
          }
          continue;
        }
        throw new Error(`found '${next.lit}', expected: ',' or 'end of string'`);
      }
      if (tok === 'end') return reqs;
      throw new Error(`found '${lit}', expected: !, identifier, or 'end of string'`);
    }
  }

  private requirement(): LabelRequirement {
    let operator: LabelOperator | undefined;
    let { tok, lit } = this.take(true);
    if (tok === '!') {
      operator = '!';
      ({ tok, lit } = this.take(true));
    }
    if (tok !== 'id') throw new Error(`found '${lit}', expected: identifier`);
    const key = lit;
    const keyErrs = qualifiedNameErrors(key);
    if (keyErrs.length) throw new Error(invalidValue('<nil>', key, keyErrs.join('; ')));
    // `!key` is complete on its own; whatever follows is the caller's problem (`!a=b` fails
    // on the `=` with "expected: ',' or 'end of string'", as upstream).
    if (operator === '!') return { key, operator, values: [] };
    const next = this.look(true).tok;
    if (next === 'end' || next === ',') return { key, operator: 'exists', values: [] };
    const op = this.operator();
    const values = op === 'in' || op === 'notin' ? this.valueSet() : this.exactValue();
    return newRequirement(key, op, values);
  }

  private operator(): LabelOperator {
    const { tok, lit } = this.take(false);
    switch (tok) {
      case 'in':
        return 'in';
      case 'notin':
        return 'notin';
      case '=':
        return '=';
      case '==':
        return '==';
      case '!=':
        return '!=';
      case '>':
        return 'gt';
      case '<':
        return 'lt';
      default:
        throw new Error(`found '${lit}', expected: ${BINARY_OPERATORS}`);
    }
  }

  private valueSet(): string[] {
    const open = this.take(true);
    if (open.tok !== '(') throw new Error(`found '${open.lit}' expected: '('`);
    const { tok, lit } = this.look(true);
    if (tok === ')') {
      this.take(true);
      return [''];
    }
    if (tok !== 'id' && tok !== ',') {
      throw new Error(`found '${lit}', expected: ',', ')' or identifier`);
    }
    const set = this.identifiers();
    if (this.take(true).tok !== ')') throw new Error(`found '${lit}', expected: ')'`);
    return set;
  }

  private identifiers(): string[] {
    const set = new Set<string>();
    for (;;) {
      const { tok, lit } = this.take(true);
      if (tok === 'id') {
        set.add(lit);
        const after = this.look(true);
        if (after.tok === ',') continue;
        if (after.tok === ')') return [...set];
        throw new Error(`found '${after.lit}', expected: ',' or ')'`);
      }
      if (tok === ',') {
        // "(,", ",," and ",)" each stand for an empty value.
        if (set.size === 0) set.add('');
        const after = this.look(true).tok;
        if (after === ')') {
          set.add('');
          return [...set];
        }
        if (after === ',') {
          this.take(true);
          set.add('');
        }
        continue;
      }
      throw new Error(`found '${lit}', expected: ',', or identifier`);
    }
  }

  private exactValue(): string[] {
    const ahead = this.look(true).tok;
    if (ahead === 'end' || ahead === ',') return [''];
    const { tok, lit } = this.take(true);
    if (tok === 'id') return [lit];
    throw new Error(`found '${lit}', expected: identifier`);
  }
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** labels.NewRequirement's checks on values (the key was checked while parsing). */
function newRequirement(key: string, operator: LabelOperator, raw: string[]): LabelRequirement {
  const values = [...new Set(raw)].sort(byteOrder);
  const errs: string[] = [];
  if (operator === 'gt' || operator === 'lt') {
    values.forEach((v, i) => {
      if (!/^[+-]?\d+$/.test(v)) {
        errs.push(
          invalidValue(`values[${i}]`, v, "for 'Gt', 'Lt' operators, the value must be an integer"),
        );
      }
    });
  }
  values.forEach((v, i) => {
    const e = labelValueErrors(v);
    if (e.length) errs.push(invalidValue(`values[${i}][${key}]`, v, e.join('; ')));
  });
  if (errs.length === 1) throw new Error(errs[0]);
  if (errs.length > 1) throw new Error(`[${errs.join(', ')}]`);
  return { key, operator, values };
}

function matchOne(r: LabelRequirement, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const v = has ? labels[r.key]! : '';
  switch (r.operator) {
    case 'in':
    case '=':
    case '==':
      return has && r.values.includes(v);
    case 'notin':
    case '!=':
      return !has || !r.values.includes(v);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has || !/^[+-]?\d+$/.test(v) || r.values.length !== 1) return false;
      const have = BigInt(v);
      const want = BigInt(r.values[0]!);
      return r.operator === 'gt' ? have > want : have < want;
    }
  }
}

/** Parses a labelSelector; throws a 400 BadRequest StatusError with apimachinery's message. */
export function parseLabelSelector(selector: string): LabelSelector {
  let requirements: LabelRequirement[];
  try {
    requirements = new Parser(lex(selector)).parse();
  } catch (e) {
    throw badRequest((e as Error).message);
  }
  requirements.sort((a, b) => byteOrder(a.key, b.key));
  return {
    requirements,
    empty: requirements.length === 0,
    matches: (labels) => requirements.every((r) => matchOne(r, labels ?? {})),
    requiresExactMatch(key) {
      const r = requirements.find((q) => q.key === key);
      if (!r || !['=', '==', 'in'].includes(r.operator) || r.values.length !== 1) return undefined;
      return r.values[0];
    },
  };
}
