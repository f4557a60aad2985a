// JSON Patch (RFC 6902) from the object as received to the object as the webhook wants it.
// The operations are fast-json-patch's compare(), op for op and in its order (the property
// test in patch.test.ts holds it to that): "~" and "/" in keys escaped (~0, ~1), missing
// parent maps added as whole values, which is what the API server's patcher needs. It
// differs in what it does where nothing changed, the most of a review's object: no path
// string is built there, only when an operation needs one.
import fastJsonPatch from 'fast-json-patch';

export type PatchOp = fastJsonPatch.Operation;

type Json = Record<string, unknown>;

/** Where a value sits: its JSON Pointer, built only when an operation names it. */
interface Where {
  readonly up: Where | undefined;
  readonly key: string | number;
}

const hasOwn = (o: object, key: string | number) => Object.prototype.hasOwnProperty.call(o, key);

function pointer(where: Where | undefined): string {
  if (!where) return '';
  const k = String(where.key);
  const escaped =
    k.includes('~') || k.includes('/') ? k.replace(/~/g, '~0').replace(/\//g, '~1') : k;
  return `${pointer(where.up)}/${escaped}`;
}

/** A value as the operation carries it: a copy through JSON (undefined as null), as compare() does. */
function copy(value: unknown): unknown {
  if (typeof value === 'object') return JSON.parse(JSON.stringify(value)) as unknown;
  return value === undefined ? null : value;
}

export function jsonPatch(before: object, after: object): PatchOp[] {
  const ops: PatchOp[] = [];
  diff(before as Json, after as Json, undefined, ops);
  return ops;
}

function diff(mirror: Json, obj: Json, where: Where | undefined, ops: PatchOp[]): void {
  if (obj === mirror) return;
  if (typeof obj.toJSON === 'function') {
    // Not JSON yet (a Date, say): compare() knows what that becomes; its paths are relative.
    const base = pointer(where);
    for (const op of fastJsonPatch.compare(mirror, obj)) ops.push({ ...op, path: base + op.path });
    return;
  }
  const oldArray = Array.isArray(mirror);
  const newArray = Array.isArray(obj);
  const oldKeys = oldArray ? undefined : Object.keys(mirror);
  const newKeys = newArray ? undefined : Object.keys(obj);
  const oldLength = oldKeys ? oldKeys.length : (mirror as unknown as unknown[]).length;
  const newLength = newKeys ? newKeys.length : (obj as unknown as unknown[]).length;
  let deleted = false;
  for (let t = oldLength - 1; t >= 0; t--) {
    const key = oldKeys ? (oldKeys[t] as string) : t;
    const oldVal = mirror[key as string];
    const newVal = obj[key as string];
    if (hasOwn(obj, key) && !(newVal === undefined && oldVal !== undefined && !newArray)) {
      if (
        typeof oldVal === 'object' &&
        oldVal !== null &&
        typeof newVal === 'object' &&
        newVal !== null &&
        Array.isArray(oldVal) === Array.isArray(newVal)
      ) {
        diff(oldVal as Json, newVal as Json, { up: where, key }, ops);
      } else if (oldVal !== newVal) {
        ops.push({ op: 'replace', path: pointer({ up: where, key }), value: copy(newVal) });
      }
    } else if (oldArray === newArray) {
      ops.push({ op: 'remove', path: pointer({ up: where, key }) });
      deleted = true;
    } else {
      ops.push({ op: 'replace', path: pointer(where), value: obj });
    }
  }
  if (!deleted && newLength === oldLength) return;
  for (let t = 0; t < newLength; t++) {
    const key = newKeys ? (newKeys[t] as string) : t;
    if (!hasOwn(mirror, key) && obj[key as string] !== undefined) {
      ops.push({ op: 'add', path: pointer({ up: where, key }), value: copy(obj[key as string]) });
    }
  }
}
