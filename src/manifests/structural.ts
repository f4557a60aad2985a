// The API server's structural-schema rule for CRDs, as a check: every field has a type,
// except inside `x-kubernetes-preserve-unknown-fields` (free-form values). Used by the
// tests of every CRD annex renders.
type Schema = Record<string, unknown>;

/** The paths (`.spec.rules[].path`) of fields that break the rule; empty = structural. */
export function untypedFields(schema: Schema, at = ''): string[] {
  if (schema['x-kubernetes-preserve-unknown-fields'] === true && !schema.properties) {
    return typeof schema.type === 'string' ? [] : [at];
  }
  const out = typeof schema.type === 'string' ? [] : [at];
  for (const [k, v] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
    out.push(...untypedFields(v, `${at}.${k}`));
  }
  if (schema.items) out.push(...untypedFields(schema.items as Schema, `${at}[]`));
  const extra = schema.additionalProperties;
  if (typeof extra === 'object' && extra) out.push(...untypedFields(extra as Schema, `${at}{}`));
  return out;
}
