// OpenAPI v2 and v3 generated from each kind's JSON Schema, so `kubectl explain` and the
// aggregator's spec merge work. Definitions are named like kube-openapi names Go types,
// reversed-domain group + version + kind (metrics.annex.dev → dev.annex.metrics.v1beta1.NodeMetrics),
// carry x-kubernetes-group-version-kind (how explain finds a kind), and point metadata at
// a minimal io.k8s.apimachinery ObjectMeta/ListMeta so every $ref resolves in one document.
import type { GroupVersionDecl, JsonSchema, ResourceDecl } from '../core/types.js';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const OBJECT_META = `${META}.ObjectMeta`;
const LIST_META = `${META}.ListMeta`;
const TIME = `${META}.Time`;

export function definitionName(group: string, version: string, kind: string): string {
  return [...group.split('.').reverse(), version, kind].join('.');
}

type RefStyle = 'v2' | 'v3';

const refTo = (style: RefStyle, name: string) =>
  style === 'v2' ? `#/definitions/${name}` : `#/components/schemas/${name}`;

/** A field pointing at another definition, the way each spec version writes it upstream. */
function refField(style: RefStyle, name: string, description: string): JsonSchema {
  return style === 'v2'
    ? { $ref: refTo(style, name), description }
    : { allOf: [{ $ref: refTo(style, name) }], default: {}, description };
}

const API_VERSION_DOC =
  'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.';
const KIND_DOC =
  'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase.';

/** JSON Schema keywords OpenAPI (v2 and 3.0) does not know. */
function sanitize(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(sanitize);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$schema' || k === '$id' || k === '$comment' || k === 'examples') continue;
    if (k === 'const') {
      out.enum = [v];
      continue;
    }
    // Property names are data, not keywords: keep them, sanitize their schemas.
    if (k === 'properties' && v && typeof v === 'object') {
      out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, sanitize(s)]));
      continue;
    }
    out[k] = sanitize(v);
  }
  return out;
}

function gvk(group: string, version: string, kind: string) {
  return [{ group, kind, version }];
}

function kindSchema(style: RefStyle, g: string, v: string, r: ResourceDecl): JsonSchema {
  const base = sanitize(r.schema) as JsonSchema;
  const props = (base.properties as Record<string, JsonSchema> | undefined) ?? {};
  return {
    ...base,
    type: 'object',
    properties: {
      apiVersion: { type: 'string', description: API_VERSION_DOC },
      kind: { type: 'string', description: KIND_DOC },
      ...props,
      metadata: refField(style, OBJECT_META, "Standard object's metadata."),
    },
    'x-kubernetes-group-version-kind': gvk(g, v, r.kind),
  };
}

function listSchema(style: RefStyle, g: string, v: string, r: ResourceDecl): JsonSchema {
  return {
    type: 'object',
    description: `${r.kind}List is a list of ${r.kind}.`,
    required: ['items'],
    properties: {
      apiVersion: { type: 'string', description: API_VERSION_DOC },
      items: {
        type: 'array',
        description: `List of ${r.kind}.`,
        items:
          style === 'v2'
            ? { $ref: refTo(style, definitionName(g, v, r.kind)) }
            : { allOf: [{ $ref: refTo(style, definitionName(g, v, r.kind)) }], default: {} },
      },
      kind: { type: 'string', description: KIND_DOC },
      metadata: refField(style, LIST_META, 'Standard list metadata.'),
    },
    'x-kubernetes-group-version-kind': gvk(g, v, `${r.kind}List`),
  };
}

function metaSchemas(style: RefStyle): Record<string, JsonSchema> {
  const time = { $ref: refTo(style, TIME) };
  return {
    [TIME]: {
      type: 'string',
      format: 'date-time',
      description:
        'Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.',
    },
    [OBJECT_META]: {
      type: 'object',
      description: 'ObjectMeta is metadata that all persisted resources must have.',
      properties: {
        name: { type: 'string', description: 'Name must be unique within a namespace.' },
        namespace: {
          type: 'string',
          description: 'Namespace defines the space within which each name must be unique.',
        },
        labels: {
          type: 'object',
          additionalProperties: { type: 'string', default: '' },
          description:
            'Map of string keys and values that can be used to organize and categorize objects.',
        },
        annotations: {
          type: 'object',
          additionalProperties: { type: 'string', default: '' },
          description: 'Annotations is an unstructured key value map stored with a resource.',
        },
        creationTimestamp:
          style === 'v2'
            ? {
                ...time,
                description:
                  'CreationTimestamp is a timestamp representing the server time when this object was created.',
              }
            : {
                allOf: [time],
                description:
                  'CreationTimestamp is a timestamp representing the server time when this object was created.',
              },
        resourceVersion: {
          type: 'string',
          description: 'An opaque value that represents the internal version of this object.',
        },
        uid: {
          type: 'string',
          description: 'UID is the unique in time and space value for this object.',
        },
      },
    },
    [LIST_META]: {
      type: 'object',
      description:
        'ListMeta describes metadata that synthetic resources must have, including lists.',
      properties: {
        continue: {
          type: 'string',
          description:
            'continue may be set if the user set a limit on the number of items returned.',
        },
        remainingItemCount: {
          type: 'integer',
          format: 'int64',
          description:
            'remainingItemCount is the number of subsequent items in the list which are not included in this list response.',
        },
        resourceVersion: {
          type: 'string',
          description: "String that identifies the server's internal version of this object.",
        },
      },
    },
  };
}

interface Op {
  path: string;
  action: 'list' | 'get' | 'watch';
  r: ResourceDecl;
  namespaced: boolean;
  named: boolean;
}

function operations(g: GroupVersionDecl, v: string): Op[] {
  const ops: Op[] = [];
  const prefix = `/apis/${g.group}/${v}`;
  for (const r of g.resources) {
    const canList = r.verbs.includes('list');
    const canGet = r.verbs.includes('get');
    const bases = r.namespaced
      ? [
          { base: `${prefix}/namespaces/{namespace}/${r.plural}`, namespaced: true },
          { base: `${prefix}/${r.plural}`, namespaced: false },
        ]
      : [{ base: `${prefix}/${r.plural}`, namespaced: false }];
    for (const { base, namespaced } of bases) {
      if (canList) ops.push({ path: base, action: 'list', r, namespaced, named: false });
      // Items are addressed inside their namespace only (or at the root when cluster-scoped).
      if (canGet && (namespaced || !r.namespaced)) {
        ops.push({ path: `${base}/{name}`, action: 'get', r, namespaced, named: true });
      }
    }
  }
  return ops;
}

const upperFirst = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function operationId(g: string, v: string, op: Op): string {
  const gPart = g.split('.').map(upperFirst).join('');
  const scope = op.r.namespaced && op.namespaced ? 'Namespaced' : '';
  const all = op.r.namespaced && !op.namespaced ? 'ForAllNamespaces' : '';
  const verb = op.action === 'get' ? 'read' : op.action;
  return `${verb}${gPart}${upperFirst(v)}${scope}${op.r.kind}${all}`;
}

function pathParams(op: Op) {
  const params: { name: string; in: 'path'; required: true; description: string }[] = [];
  if (op.namespaced)
    params.push({
      name: 'namespace',
      in: 'path',
      required: true,
      description: 'object name and auth scope, such as for teams and projects',
    });
  if (op.named)
    params.push({
      name: 'name',
      in: 'path',
      required: true,
      description: `name of the ${op.r.kind}`,
    });
  return params;
}

const LIST_QUERY = [
  'labelSelector',
  'fieldSelector',
  'limit',
  'continue',
  'resourceVersion',
  'watch',
  'timeoutSeconds',
  'allowWatchBookmarks',
];

function queryParams(style: RefStyle, op: Op) {
  if (op.named) return [];
  return LIST_QUERY.map((name) => {
    const type =
      name === 'limit' || name === 'timeoutSeconds'
        ? 'integer'
        : name === 'watch' || name === 'allowWatchBookmarks'
          ? 'boolean'
          : 'string';
    return style === 'v2'
      ? { name, in: 'query', type, uniqueItems: true }
      : { name, in: 'query', schema: { type, uniqueItems: true } };
  });
}

function paths(style: RefStyle, g: GroupVersionDecl, v: string): Record<string, unknown> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const op of operations(g, v)) {
    const target = definitionName(g.group, v, op.action === 'get' ? op.r.kind : `${op.r.kind}List`);
    const schema = { $ref: refTo(style, target) };
    const response =
      style === 'v2'
        ? { description: 'OK', schema }
        : { description: 'OK', content: { 'application/json': { schema } } };
    out[op.path] = {
      get: {
        description: `${op.action === 'get' ? 'read the specified' : 'list objects of kind'} ${op.r.kind}`,
        operationId: operationId(g.group, v, op),
        tags: [`${g.group.split('.').map(upperFirst).join('')}_${v}`],
        ...(style === 'v2' ? { produces: ['application/json'], schemes: ['https'] } : {}),
        parameters: [...pathParams(op), ...queryParams(style, op)],
        responses: { '200': response, '401': { description: 'Unauthorized' } },
        'x-kubernetes-action': op.action,
        'x-kubernetes-group-version-kind': { group: g.group, version: v, kind: op.r.kind },
      },
    };
  }
  return out;
}

function schemas(style: RefStyle, g: GroupVersionDecl, v: string): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const r of g.resources) {
    out[definitionName(g.group, v, r.kind)] = kindSchema(style, g.group, v, r);
    out[definitionName(g.group, v, `${r.kind}List`)] = listSchema(style, g.group, v, r);
  }
  return { ...out, ...metaSchemas(style) };
}

const INFO = { title: 'annex', version: 'v0.1.0' };

/** /openapi/v2: one Swagger 2.0 document for every group and version. */
export function openapiV2(groups: readonly GroupVersionDecl[]) {
  let allPaths: Record<string, unknown> = {};
  let definitions: Record<string, JsonSchema> = {};
  for (const g of groups) {
    for (const v of g.versions) {
      allPaths = { ...allPaths, ...paths('v2', g, v) };
      definitions = { ...definitions, ...schemas('v2', g, v) };
    }
  }
  return {
    swagger: '2.0',
    info: INFO,
    paths: allPaths,
    definitions,
    securityDefinitions: { BearerToken: { type: 'apiKey', name: 'authorization', in: 'header' } },
    security: [{ BearerToken: [] }],
  };
}

/** /openapi/v3/apis/<g>/<v>: one OpenAPI 3.0 document per group version. */
export function openapiV3(g: GroupVersionDecl, v: string) {
  return {
    openapi: '3.0.0',
    info: INFO,
    paths: paths('v3', g, v),
    components: {
      schemas: schemas('v3', g, v),
      securitySchemes: { BearerToken: { type: 'apiKey', name: 'authorization', in: 'header' } },
    },
    security: [{ BearerToken: [] }],
  };
}

/** /openapi/v3: where each group version's document is, with its content hash. */
export function openapiV3Index(entries: { group: string; version: string; hash: string }[]) {
  return {
    paths: Object.fromEntries(
      entries.map((e) => [
        `apis/${e.group}/${e.version}`,
        { serverRelativeURL: `/openapi/v3/apis/${e.group}/${e.version}?hash=${e.hash}` },
      ]),
    ),
  };
}
