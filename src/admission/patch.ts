// JSON Patch (RFC 6902) from the object as received to the object as the webhook wants it.
// fast-json-patch escapes "~" and "/" in keys (~0, ~1) and adds missing parent maps as
// whole values, which is what the API server's patcher needs.
import fastJsonPatch from 'fast-json-patch';

export type PatchOp = fastJsonPatch.Operation;

export function jsonPatch(before: object, after: object): PatchOp[] {
  return fastJsonPatch.compare(before, after);
}
