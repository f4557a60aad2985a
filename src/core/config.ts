// A configuration section declared by its JSON Schema alone. The schema's `default`s are the
// one place a default is written (docs/configuration.md renders them from there), so the
// section's `defaults` are read off the schema instead of being written a second time.
import type { JSONSchemaType } from 'ajv';
import type { FeatureConfig } from './feature.js';

/** An empty object as a default: ajv then fills its fields from their own defaults. */
export const filledIn = <T>() => ({}) as T;

/** A section whose TypeScript type `C` the schema is checked against (ajv's JSONSchemaType). */
export interface DeclaredSection<C> extends FeatureConfig<C> {
  schema: JSONSchemaType<C>;
}

export const declareConfig = <C>(schema: JSONSchemaType<C>): DeclaredSection<C> => ({
  schema,
  defaults: defaultsOf(schema as Node) as C,
});

type Node = { default?: unknown; properties?: Record<string, Node> };

/** What ajv's useDefaults makes of an absent object: each field's default, nested ones filled. */
function defaultsOf(schema: Node): unknown {
  if (!schema.properties) return structuredClone(schema.default);
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(schema.properties)) {
    const value = defaultsOf(field);
    if (value !== undefined) out[key] = value;
  }
  return out;
}
