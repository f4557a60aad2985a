import { describe, expect, it } from 'vitest';
import { definitionName, openapiV2, openapiV3, openapiV3Index } from './openapi.js';
import type { GroupVersionDecl } from '../core/types.js';

const group: GroupVersionDecl = {
  group: 'metrics.annex.dev',
  versions: ['v1beta1'],
  resources: [
    {
      kind: 'NodeMetrics',
      plural: 'nodes',
      singular: 'nodemetrics',
      namespaced: false,
      verbs: ['get', 'list'],
      schema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        description: 'NodeMetrics sets resource usage metrics of a node.',
        properties: {
          metadata: { type: 'object' },
          window: { type: 'string', description: 'window' },
          const: { const: 'x' },
        },
      },
      columns: [],
      provider: { snapshot: () => ({ resourceVersion: '1', items: [] }) },
    },
    {
      kind: 'PodMetrics',
      plural: 'pods',
      singular: 'podmetrics',
      namespaced: true,
      verbs: ['get', 'list'],
      schema: { type: 'object' },
      columns: [],
      provider: { snapshot: () => ({ resourceVersion: '1', items: [] }) },
    },
  ],
};

/** Every $ref in a document points at a schema the document defines. */
function danglingRefs(doc: unknown, resolve: (ref: string) => unknown): string[] {
  const bad: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === '$ref' && typeof x === 'string' && resolve(x) === undefined) bad.push(x);
        else walk(x);
      }
    }
  };
  walk(doc);
  return bad;
}

describe('OpenAPI', () => {
  it('names definitions by reversed group, version and kind', () => {
    expect(definitionName('metrics.annex.dev', 'v1beta1', 'NodeMetrics')).toBe(
      'dev.annex.metrics.v1beta1.NodeMetrics',
    );
  });

  it('v3 per group version: GVK extensions, List kinds, meta refs that resolve', () => {
    const doc = openapiV3(group, 'v1beta1');
    const schemas = doc.components.schemas;
    const node = schemas['dev.annex.metrics.v1beta1.NodeMetrics']!;
    expect(node['x-kubernetes-group-version-kind']).toEqual([
      { group: 'metrics.annex.dev', kind: 'NodeMetrics', version: 'v1beta1' },
    ]);
    expect(node.description).toBe('NodeMetrics sets resource usage metrics of a node.');
    expect(node.$schema).toBeUndefined();
    const props = node.properties as Record<string, Record<string, unknown>>;
    expect(props.metadata).toEqual({
      allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }],
      default: {},
      description: "Standard object's metadata.",
    });
    expect(props.const).toEqual({ enum: ['x'] });
    expect(props.window).toEqual({ type: 'string', description: 'window' });
    const list = schemas['dev.annex.metrics.v1beta1.NodeMetricsList']!;
    expect(list['x-kubernetes-group-version-kind']).toEqual([
      { group: 'metrics.annex.dev', kind: 'NodeMetricsList', version: 'v1beta1' },
    ]);
    const prefix = '#/components/schemas/';
    expect(
      danglingRefs(doc, (r) =>
        r.startsWith(prefix) ? schemas[r.slice(prefix.length)] : undefined,
      ),
    ).toEqual([]);
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/apis/metrics.annex.dev/v1beta1/namespaces/{namespace}/pods',
      '/apis/metrics.annex.dev/v1beta1/namespaces/{namespace}/pods/{name}',
      '/apis/metrics.annex.dev/v1beta1/nodes',
      '/apis/metrics.annex.dev/v1beta1/nodes/{name}',
      '/apis/metrics.annex.dev/v1beta1/pods',
    ]);
  });

  it('v2 holds every group version with #/definitions refs', () => {
    const doc = openapiV2([group]);
    expect(doc.swagger).toBe('2.0');
    const prefix = '#/definitions/';
    expect(
      danglingRefs(doc, (r) =>
        r.startsWith(prefix) ? doc.definitions[r.slice(prefix.length)] : undefined,
      ),
    ).toEqual([]);
    expect(doc.definitions['dev.annex.metrics.v1beta1.PodMetricsList']).toBeDefined();
    const op = (
      doc.paths['/apis/metrics.annex.dev/v1beta1/namespaces/{namespace}/pods'] as {
        get: Record<string, unknown>;
      }
    ).get;
    expect(op['x-kubernetes-action']).toBe('list');
    expect(op.operationId).toBe('listMetricsAnnexDevV1beta1NamespacedPodMetrics');
  });

  it('v3 index points at each document with its hash', () => {
    expect(openapiV3Index([{ group: 'g.io', version: 'v1', hash: 'ABC' }])).toEqual({
      paths: { 'apis/g.io/v1': { serverRelativeURL: '/openapi/v3/apis/g.io/v1?hash=ABC' } },
    });
  });
});
