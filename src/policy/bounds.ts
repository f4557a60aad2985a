// What a policy's answer may hold, whatever the object holds: a denial or warning quotes
// no value of more than MAX_QUOTED_VALUE_BYTES, a denial lists at most MAX_CAUSES causes
// in at most MAX_CAUSES_BYTES of message, and warnings are cut as the API server cuts
// them. Without these, 300 failing rules on a 900 KB value answered 277 MB.
import { OmittedValue } from '../admission/names/index.js';
import type { FieldCause } from '../admission/verdict.js';

/** A failing value larger than this (its UTF-8 bytes; JSON for objects) is not quoted. */
export const MAX_QUOTED_VALUE_BYTES = 1024;
/** A denial lists at most this many causes, then one saying how many more there were. */
export const MAX_CAUSES = 100;
/**
 * The causes' text in a denial's message (Status.message joins them; details.causes holds
 * them again). 32 KiB, less room for `<Kind> "<name>" is invalid: ` and the count cause.
 */
export const MAX_CAUSES_BYTES = 31 * 1024;

// k8s.io/apiserver/pkg/endpoints/filters/warning.go: once the warnings of one response
// pass truncateAtTotalRunes (4 * 1024) the recorder truncates every warning to
// truncateItemRunes (256), replaying those already recorded, and drops any that come
// after the total is reached again. The API server does that to annex's warnings too;
// annex does it first, so that its answer is no larger than what the client can get.
export const WARNINGS_TOTAL_RUNES = 4 * 1024;
export const WARNING_ITEM_RUNES = 256;

/** Sizes of the objects measured, so a value matched by many rules is measured once. */
const jsonSizes = new WeakMap<object, number>();

/** The size of `v` as JSON, strings counted as their UTF-8 bytes (escapes are not counted). */
function jsonBytes(v: unknown): number {
  if (typeof v === 'string') return Buffer.byteLength(v) + 2;
  if (v === null || typeof v !== 'object') return String(v).length;
  const known = jsonSizes.get(v);
  if (known !== undefined) return known;
  // Brackets, and a comma or a key's quotes and colon per entry (one comma too many).
  let n = 1;
  if (Array.isArray(v)) for (const x of v) n += jsonBytes(x) + 1;
  else for (const [k, x] of Object.entries(v)) n += Buffer.byteLength(k) + 4 + jsonBytes(x);
  if (n === 1) n = 2;
  jsonSizes.set(v, n);
  return n;
}

/** What a cause quotes of a failing value: the value, or an OmittedValue standing for it. */
export type Quote = (value: unknown) => unknown;

/**
 * A Quote for one evaluation: `value` if it is small enough to quote, else its size. A
 * long string failing many rules is measured once (V8 keeps a string's hash, so the
 * lookup does not read it again); the sizes go with the evaluation, the strings too.
 */
export function quoter(): Quote {
  const longSizes = new Map<string, number>();
  return (value) => {
    if (typeof value === 'string') {
      // A string longer than the bound in UTF-16 units is longer in bytes too.
      if (value.length > MAX_QUOTED_VALUE_BYTES) {
        let n = longSizes.get(value);
        if (n === undefined) longSizes.set(value, (n = Buffer.byteLength(value)));
        return new OmittedValue(n);
      }
      const bytes = Buffer.byteLength(value);
      return bytes <= MAX_QUOTED_VALUE_BYTES ? value : new OmittedValue(bytes);
    }
    if (value === null || typeof value !== 'object') return value;
    const bytes = jsonBytes(value);
    return bytes <= MAX_QUOTED_VALUE_BYTES ? value : new OmittedValue(bytes);
  };
}

const rendered = (c: FieldCause) => `${c.field}: ${c.message}`;

/**
 * The causes a denial lists: all of them when they fit; else the first distinct ones
 * within MAX_CAUSES and MAX_CAUSES_BYTES, then one `FieldValueTooMany` cause counting the
 * rest (field.TooMany's reason; kubectl prints it as the last `* ` line).
 */
export function boundCauses(causes: readonly FieldCause[]): (FieldCause & { reason?: string })[] {
  const distinct = new Map<string, FieldCause>();
  for (const c of causes) if (!distinct.has(rendered(c))) distinct.set(rendered(c), c);
  const kept: FieldCause[] = [];
  let bytes = 2; // the brackets of `[c1, c2]`
  for (const [text, c] of distinct) {
    const more = Buffer.byteLength(text) + (kept.length ? 2 : 0);
    if (kept.length === MAX_CAUSES || bytes + more > MAX_CAUSES_BYTES) break;
    kept.push(c);
    bytes += more;
  }
  const omitted = distinct.size - kept.length;
  if (omitted === 0) return causes.length <= MAX_CAUSES ? [...causes] : kept;
  return [
    ...kept,
    {
      reason: 'FieldValueTooMany',
      field: '',
      message: `and ${omitted} more ${omitted === 1 ? 'cause' : 'causes'} not shown`,
    },
  ];
}

/** The first `n` code points of `s` (Go's []rune(s)[:n]), without splitting a pair. */
function runes(s: string, n: number): string {
  if (s.length <= n) return s;
  return Array.from(s.slice(0, 2 * n))
    .slice(0, n)
    .join('');
}

/** Code points (Go's utf8.RuneCountInString): UTF-16 units less one per surrogate pair. */
const runeCount = (s: string) =>
  s.length - (s.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0);

/**
 * Warnings as the API server's recorder would pass them on: duplicates dropped; over
 * WARNINGS_TOTAL_RUNES in all, every warning cut to WARNING_ITEM_RUNES, and none added
 * once the cut ones reach the total again.
 */
export function boundWarnings(warnings: readonly string[]): string[] {
  const distinct = [...new Set(warnings.filter((w) => w.length > 0))];
  // The first warning that takes the total over: up to it every warning is replayed cut.
  let total = 0;
  const over = distinct.findIndex((w) => {
    total += runeCount(runes(w, WARNINGS_TOTAL_RUNES + 1));
    return total > WARNINGS_TOTAL_RUNES;
  });
  if (over < 0) return distinct;
  const out = distinct.slice(0, over + 1).map((w) => runes(w, WARNING_ITEM_RUNES));
  let written = out.reduce((n, w) => n + runeCount(w), 0);
  for (const w of distinct.slice(over + 1)) {
    if (written >= WARNINGS_TOTAL_RUNES) break;
    const cut = runes(w, WARNING_ITEM_RUNES);
    out.push(cut);
    written += runeCount(cut);
  }
  return out;
}
