// The fields of the built-in kinds a policy can match, read off the pinned API server's
// OpenAPI v3 (one source of truth: builtin.ts is rendered from it, and a cluster test
// renders it again from the live server and compares). Only names and shapes are kept:
// enough to tell a path that can match something from one that never can.
import { BUILT_IN_KINDS } from '../../admission/kinds.js';

/**
 * A field's shape: '' a scalar, '*' anything (no schema: RawExtension, JSON), a type name,
 * '[]X' a list of X, '{}X' a map of X.
 */
export type Shape = string;

export interface FieldTree {
  /** `match.kinds`' names ("Pod", "apps/Deployment") → the kind's type. */
  kinds: Record<string, string>;
  /** Type → field → shape. */
  types: Record<string, Record<string, Shape>>;
}

interface Schema {
  $ref?: string;
  allOf?: Schema[];
  oneOf?: Schema[];
  type?: string;
  items?: Schema;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-group-version-kind'?: { group: string; version: string; kind: string }[];
}

/** One OpenAPI v3 document of a group-version (`/openapi/v3/apis/apps/v1`). */
export interface OpenApiDoc {
  components?: { schemas?: Record<string, Schema> };
}

const PREFIX = 'io.k8s.';
const short = (ref: string) => ref.replace(/^#\/components\/schemas\//, '').replace(PREFIX, '');

/** The group-version documents to fetch for the kinds annex knows (`/openapi/v3/<path>`). */
export function openApiPaths(): string[] {
  const gvs = new Set(
    Object.values(BUILT_IN_KINDS).map(([g, v]) => (g === '' ? `api/${v}` : `apis/${g}/${v}`)),
  );
  return [...gvs].sort();
}

/** The tree of every type reachable from the built-in kinds, from their OpenAPI v3 documents. */
export function fieldTree(docs: readonly OpenApiDoc[]): FieldTree {
  const schemas: Record<string, Schema> = {};
  for (const d of docs) Object.assign(schemas, d.components?.schemas ?? {});
  const tree: FieldTree = { kinds: {}, types: {} };
  const pending: string[] = [];

  const shapeOf = (s: Schema | undefined): Shape => {
    if (!s) return '*';
    if (s.$ref) return refShape(short(s.$ref));
    if (s.allOf?.length === 1) return shapeOf(s.allOf[0]);
    // IntOrString, Quantity: one of scalar types.
    if (s['x-kubernetes-int-or-string'] || s.oneOf?.every((o) => o.type && o.type !== 'object'))
      return '';
    if (s['x-kubernetes-preserve-unknown-fields']) return '*';
    if (s.type === 'array') return `[]${shapeOf(s.items)}`;
    if (typeof s.additionalProperties === 'object') return `{}${shapeOf(s.additionalProperties)}`;
    if (s.type === 'object' || s.properties || s.additionalProperties) return '*';
    return s.type ? '' : '*';
  };
  const refShape = (name: string): Shape => {
    const s = schemas[PREFIX + name];
    if (!s?.properties) return shapeOf(s ? { ...s, $ref: undefined } : undefined);
    if (!(name in tree.types)) {
      tree.types[name] = {};
      pending.push(name);
    }
    return name;
  };

  for (const [kind, [group, version]] of Object.entries(BUILT_IN_KINDS)) {
    const found = Object.entries(schemas).find(([, s]) =>
      s['x-kubernetes-group-version-kind']?.some(
        (g) => g.group === group && g.version === version && g.kind === kind,
      ),
    );
    if (!found) throw new Error(`no OpenAPI schema for ${group}/${version} ${kind}`);
    tree.kinds[group ? `${group}/${kind}` : kind] = refShape(short(found[0]));
  }
  for (let name = pending.shift(); name !== undefined; name = pending.shift()) {
    const props = schemas[PREFIX + name]!.properties!;
    const fields: Record<string, Shape> = {};
    for (const f of Object.keys(props).sort()) fields[f] = shapeOf(props[f]);
    tree.types[name] = fields;
  }
  // Sorted, so that a rendering differs only where the server's schema does.
  const types = Object.fromEntries(Object.entries(tree.types).sort(([a], [b]) => (a < b ? -1 : 1)));
  return { kinds: tree.kinds, types };
}

/** builtin.ts's text: one type per line, so a schema change reads as a small diff. */
export function renderFieldTree(tree: FieldTree, version: string): string {
  const lines = [
    `// Rendered from kube-apiserver ${version}'s OpenAPI v3 by test/e2e/fields-drift.test.ts`,
    '// (ANNEX_RECORD=1 writes it); do not edit. Read by fields/check.ts.',
    "import type { FieldTree } from './tree.js';",
    '',
    'export const BUILTIN_FIELDS: FieldTree = {',
    `  kinds: ${JSON.stringify(tree.kinds)},`,
    '  types: {',
    ...Object.entries(tree.types).map(
      ([t, f]) => `    ${JSON.stringify(t)}: ${JSON.stringify(f)},`,
    ),
    '  },',
    '};',
    '',
  ];
  return lines.join('\n');
}
