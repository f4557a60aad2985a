// fieldSelector: apimachinery's fields.ParseSelector grammar (`=`, `==`, `!=`, comma = AND,
// `\`-escapes for `\`, `,` and `=` in values) and kube-apiserver's rule that a field a
// resource does not declare is a 400 "field label not supported", not a silent mismatch.
import { badRequest } from '../../core/status.js';
import { compilePath } from '../jsonpath.js';
import type { KubeObject } from '../../core/types.js';

export interface FieldRequirement {
  field: string;
  operator: '=' | '!=';
  value: string;
}

export interface FieldSelector {
  requirements: FieldRequirement[];
  empty: boolean;
  requiresExactMatch(field: string): string | undefined;
}

function splitTerms(s: string): string[] {
  if (s.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

const TERM_OPERATORS = ['!=', '==', '='] as const;

function splitTerm(term: string): [string, string, string] | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of TERM_OPERATORS) {
      if (term.startsWith(op, i)) return [term.slice(0, i), op, term.slice(i + op.length)];
    }
  }
  return undefined;
}

function unescapeValue(s: string): string {
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=') {
        throw new Error(`invalid field selector: invalid escape sequence: \\${c}`);
      }
      out += c;
      inSlash = false;
    } else if (c === '\\') inSlash = true;
    else if (c === ',' || c === '=') {
      throw new Error(`invalid field selector: unescaped character in value: ${c}`);
    } else out += c;
  }
  if (inSlash) throw new Error('invalid field selector: invalid escape sequence: \\');
  return out;
}

/** Parses a fieldSelector; throws a 400 BadRequest StatusError with apimachinery's message. */
export function parseFieldSelector(selector: string): FieldSelector {
  const requirements: FieldRequirement[] = [];
  const terms = splitTerms(selector).sort();
  try {
    for (const term of terms) {
      if (term === '') continue;
      const split = splitTerm(term);
      if (!split) throw new Error(`invalid selector: '${selector}'; can't understand '${term}'`);
      const [field, op, rhs] = split;
      requirements.push({ field, operator: op === '!=' ? '!=' : '=', value: unescapeValue(rhs) });
    }
  } catch (e) {
    throw badRequest((e as Error).message);
  }
  return {
    requirements,
    empty: requirements.length === 0,
    requiresExactMatch(field) {
      const r = requirements.find((q) => q.field === field);
      return r && r.operator === '=' ? r.value : undefined;
    },
  };
}

export const OBJECT_META_FIELDS = ['metadata.name', 'metadata.namespace'];

function asFieldString(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/**
 * A predicate for the selector over one resource. `selectableFields` maps extra selector
 * keys to JSONPaths. Unknown keys → 400 `field label not supported: <key>`.
 */
export function fieldMatcher(
  selector: FieldSelector,
  selectableFields: Record<string, string> = {},
): (obj: KubeObject) => boolean {
  const getters = selector.requirements.map((r) => {
    let get: (o: KubeObject) => unknown;
    if (r.field === 'metadata.name') get = (o) => o.metadata.name;
    else if (r.field === 'metadata.namespace') get = (o) => o.metadata.namespace ?? '';
    else if (Object.prototype.hasOwnProperty.call(selectableFields, r.field)) {
      get = compilePath(selectableFields[r.field]!);
    } else throw badRequest(`field label not supported: ${r.field}`);
    return { r, get };
  });
  if (getters.length === 0) return () => true;
  return (obj) =>
    getters.every(({ r, get }) => (asFieldString(get(obj)) === r.value) === (r.operator === '='));
}
