// The file format of `annex test` (an AdmissionPolicyTest), kept in this one place: the
// command validates every test file against it, and the reference in docs/policies.md is
// its rendering (formatReference; `npm run manifests` writes it, a unit test fails on drift).
import type { JsonSchema } from '../core/types.js';

export const TEST_API_VERSION = 'policy.annex.dev/v1alpha1';
export const TEST_KIND = 'AdmissionPolicyTest';
/** What a rule can come out as (their meanings: the schema's `result`). */
export const RESULTS = ['pass', 'fail', 'warn', 'skip', 'error'] as const;
export type RuleResult = (typeof RESULTS)[number];

const paths = (description: string): JsonSchema => ({
  type: 'array',
  description,
  minItems: 1,
  items: { type: 'string', minLength: 1 },
});

export const policyTestSchema: JsonSchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'policies', 'resources', 'results'],
  additionalProperties: false,
  properties: {
    apiVersion: {
      type: 'string',
      description: `\`${TEST_API_VERSION}\`.`,
      const: TEST_API_VERSION,
    },
    kind: { type: 'string', description: `\`${TEST_KIND}\`.`, const: TEST_KIND },
    metadata: {
      type: 'object',
      description: 'The test.',
      required: ['name'],
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 1, description: 'The TEST column of the table.' },
      },
    },
    policies: paths(
      'AdmissionPolicy files or folders (a folder: its .yaml, .yml and .json files), relative to the test file; every rule of every one is evaluated.',
    ),
    resources: paths(
      'Files or folders of the objects, relative to the test file; each is created, offline, as `annex check` creates it.',
    ),
    exceptions: paths(
      "PolicyException files or folders, relative to the test file; one without a namespace is in `namespace`. Only exceptions of the objects' namespace (or of annex-system) exempt them, as in a cluster.",
    ),
    namespace: {
      type: 'string',
      minLength: 1,
      description: 'Namespace for objects without one (`annex check -n`); default `default`.',
    },
    namespaceLabels: {
      type: 'object',
      description:
        "Labels of the objects' namespace, for `namespaceSelector` and CEL's `namespaceObject`; default only `kubernetes.io/metadata.name`.",
      additionalProperties: { type: 'string' },
    },
    userInfo: {
      type: 'object',
      description: "Who sends the requests (CEL's `request.userInfo`); default nobody.",
      additionalProperties: false,
      properties: {
        username: { type: 'string', description: 'The user name.' },
        groups: {
          type: 'array',
          description: 'The groups.',
          items: { type: 'string' },
        },
      },
    },
    native: {
      type: 'boolean',
      description:
        "As `policy.native` (default true); false: every policy answers as annex's webhook (`annex check --no-native`).",
    },
    results: {
      type: 'array',
      description: 'What is expected: only these rows are checked and printed.',
      minItems: 1,
      items: {
        type: 'object',
        required: ['policy', 'rule', 'resources', 'result'],
        additionalProperties: false,
        properties: {
          policy: {
            type: 'string',
            minLength: 1,
            description: 'An AdmissionPolicy of `policies`.',
          },
          rule: {
            type: 'string',
            minLength: 1,
            description: 'One of its validate or mutate rules, by name.',
          },
          resources: {
            type: 'array',
            description:
              'Objects of `resources`: `Kind/name` (`Deployment/web`, the kind in any case), the bare name when only one object has it, or `namespace/Kind/name` when objects of several namespaces share kind and name.',
            minItems: 1,
            items: { type: 'string', minLength: 1 },
          },
          result: {
            type: 'string',
            description:
              '`pass`: the policy applied and the rule held (a mutate rule: it ran); `fail`: it failed and the policy denies or audits it; `warn`: it failed and the policy warns (actions [Warn]); `skip`: the policy does not apply to the object (match, exclude, matchConditions), or a PolicyException of `exceptions` exempts it from the rule; `error`: the API server refused the object before any policy (its own validation), or the rule could not be evaluated on it and its policy has failurePolicy Ignore (with Fail, it is a `fail`).',
            enum: [...RESULTS],
          },
          message: {
            type: 'string',
            minLength: 1,
            description:
              "A substring of what the rule said: an exempted rule's `exempted by PolicyException namespace/name`; a failed rule's causes (`field: message`, joined by `; `); a passed mutate rule's patch of the object (`add /spec/containers/0/resources/requests: {\"cpu\":\"100m\"}`, every mutate rule's, joined by `; `); for `error`, the API server's refusal as kubectl prints it, or the evaluation error.",
          },
        },
      },
    },
  },
};

interface Row {
  key: string;
  schema: JsonSchema;
}

/** Every field as { key, schema }, depth first: `results[].policy` for an array's items. */
function fields(schema: JsonSchema, prefix = ''): Row[] {
  const rows: Row[] = [];
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
  for (const [name, s] of Object.entries(props)) {
    const key = prefix + name;
    rows.push({ key, schema: s });
    const items = s.items as JsonSchema | undefined;
    if (s.type === 'object' && s.properties) rows.push(...fields(s, `${key}.`));
    if (s.type === 'array' && items?.properties) rows.push(...fields(items, `${key}[].`));
  }
  return rows;
}

function typeOf(s: JsonSchema): string {
  const items = s.items as JsonSchema | undefined;
  if (s.type === 'array') return items?.type === 'object' ? 'list of objects' : 'list of strings';
  if (s.enum) return (s.enum as string[]).map((v) => `\`${v}\``).join(' \\| ');
  if (s.type === 'object' && s.additionalProperties) return 'map of strings';
  return String(s.type);
}

/** The format as a Markdown table: field, type, required, description. */
export function formatReference(schema: JsonSchema = policyTestSchema): string {
  const required = new Set<string>();
  const walk = (s: JsonSchema, prefix: string) => {
    for (const r of (s.required ?? []) as string[]) required.add(prefix + r);
    for (const [n, p] of Object.entries((s.properties ?? {}) as Record<string, JsonSchema>)) {
      if (p.properties) walk(p, `${prefix}${n}.`);
      const items = p.items as JsonSchema | undefined;
      if (items?.properties) walk(items, `${prefix}${n}[].`);
    }
  };
  walk(schema, '');
  const cell = (t: string) => t.replaceAll('|', '\\|').replaceAll('<', '&lt;');
  return [
    '| field | type | required | description |',
    '| --- | --- | --- | --- |',
    ...fields(schema).map(
      ({ key, schema: s }) =>
        `| \`${key}\` | ${typeOf(s)} | ${required.has(key) ? 'yes' : ''} | ${cell(String(s.description ?? ''))} |`,
    ),
  ].join('\n');
}
