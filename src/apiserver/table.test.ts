import { describe, expect, it } from 'vitest';
import { StatusError } from '../core/status.js';
import { columnDefinitions, humanDuration, includeObjectOf, toTable } from './table.js';
import type { KubeObject, ResourceDecl } from '../core/types.js';

const decl: ResourceDecl = {
  kind: 'Widget',
  plural: 'widgets',
  singular: 'widget',
  namespaced: true,
  verbs: ['get', 'list'],
  schema: { type: 'object' },
  columns: [
    { name: 'Name', type: 'string', description: 'dup', jsonPath: '.metadata.name' },
    { name: 'Size', type: 'integer', description: 'size', jsonPath: '{.spec.size}' },
    { name: 'Tags', type: 'string', description: 'tags', jsonPath: '$.spec.tags', priority: 1 },
    {
      name: 'First',
      type: 'string',
      description: 'filter',
      jsonPath: '$.spec.items[?(@.on==true)].id',
    },
    { name: 'Age', type: 'date', description: 'age', jsonPath: '.metadata.creationTimestamp' },
    {
      name: 'Total',
      type: 'number',
      description: 'sum',
      jsonPath: '',
      value: (o) => (o.spec as { size: number }).size * 2,
    },
  ],
  provider: { snapshot: () => ({ resourceVersion: '1', items: [] }) },
};

const w: KubeObject = {
  metadata: { name: 'w1', namespace: 'ns', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: {
    size: 3,
    tags: ['a', 'b'],
    items: [
      { id: 'x', on: false },
      { id: 'y', on: true },
    ],
  },
};
const now = new Date('2026-01-01T00:05:03Z');

describe('Table', () => {
  it('puts one Name column first, then the declared ones', () => {
    const cols = columnDefinitions(decl);
    expect(cols.map((c) => c.name)).toEqual(['Name', 'Size', 'Tags', 'First', 'Age', 'Total']);
    expect(cols[0]).toEqual({
      name: 'Name',
      type: 'string',
      format: 'name',
      description: 'Name of the resource',
      priority: 0,
    });
    expect(cols[2]).toMatchObject({ priority: 1, format: '' });
  });

  it('computes cells: paths in every syntax, filters, dates as ages, computed values, missing as null', () => {
    const t = toTable(
      decl,
      [w, { metadata: { name: 'empty' } }],
      { resourceVersion: '7' },
      {
        version: 'v1',
        includeObject: 'None',
        apiVersion: 'g/v1',
        now,
      },
    );
    expect(t.kind).toBe('Table');
    expect(t.apiVersion).toBe('meta.k8s.io/v1');
    expect(t.metadata).toEqual({ resourceVersion: '7' });
    expect(t.rows[0]).toEqual({ cells: ['w1', 3, '["a","b"]', 'y', '5m3s', 6] });
    expect(t.rows[1]!.cells).toEqual(['empty', null, null, null, null, null]);
  });

  it('includes PartialObjectMetadata by default and the full object on request', () => {
    const meta = toTable(
      decl,
      [w],
      {},
      { version: 'v1beta1', includeObject: 'Metadata', apiVersion: 'g/v1', now },
    );
    expect(meta.rows[0]!.object).toEqual({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1beta1',
      metadata: w.metadata,
    });
    const full = toTable(
      decl,
      [w],
      {},
      { version: 'v1', includeObject: 'Object', apiVersion: 'g/v1', now, noHeaders: true },
    );
    expect(full.rows[0]!.object).toMatchObject({
      apiVersion: 'g/v1',
      kind: 'Widget',
      spec: { size: 3 },
    });
    expect(full.columnDefinitions).toBeUndefined();
  });

  it('parses includeObject and rejects unknown values with 400', () => {
    expect(includeObjectOf(new URLSearchParams(''))).toBe('Metadata');
    expect(includeObjectOf(new URLSearchParams('includeObject=Object'))).toBe('Object');
    expect(() => includeObjectOf(new URLSearchParams('includeObject=All'))).toThrow(StatusError);
    expect(() => includeObjectOf(new URLSearchParams('includeObject=All'))).toThrow(
      'unrecognized includeObject value: "All"',
    );
  });

  it.each([
    [-5000, '<invalid>'],
    [-500, '0s'],
    [45_000, '45s'],
    [119_000, '119s'],
    [120_000, '2m'],
    [303_000, '5m3s'],
    [30 * 60_000, '30m'],
    [3 * 3600_000 + 5 * 60_000, '3h5m'],
    [10 * 3600_000, '10h'],
    [3 * 86_400_000 + 2 * 3600_000, '3d2h'],
    [40 * 86_400_000, '40d'],
    [(3 * 365 + 10) * 86_400_000, '3y10d'],
    [9 * 365 * 86_400_000, '9y'],
  ])('humanDuration(%d) = %s', (ms, want) => {
    expect(humanDuration(ms)).toBe(want);
  });
});

describe('Table cells', () => {
  const counted = (columns: ResourceDecl['columns']) => {
    let calls = 0;
    const d: ResourceDecl = {
      ...decl,
      columns: [
        ...columns,
        {
          name: 'Calls',
          type: 'integer',
          description: 'counts its computations',
          jsonPath: '',
          value: () => ++calls,
        },
      ],
    };
    return { d, calls: () => calls };
  };
  const opts = { version: 'v1', includeObject: 'None' as const, apiVersion: 'x/v1', now };

  it('are computed once per object when no cell depends on the time', () => {
    const { d, calls } = counted([]);
    const objects = [w, { ...w, metadata: { ...w.metadata, name: 'w2' } }];
    toTable(d, objects, {}, opts);
    const again = toTable(d, objects, {}, opts);
    expect(calls()).toBe(2);
    expect(again.rows.map((r) => r.cells)).toEqual([
      ['w1', 1],
      ['w2', 2],
    ]);
  });

  it('are computed per Table when a date column makes ages', () => {
    const { d, calls } = counted([
      { name: 'Age', type: 'date', description: 'age', jsonPath: '.metadata.creationTimestamp' },
    ]);
    toTable(d, [w], {}, opts);
    const later = toTable(d, [w], {}, { ...opts, now: new Date('2026-01-01T01:00:00Z') });
    expect(calls()).toBe(2);
    expect(later.rows[0]!.cells).toEqual(['w1', '60m', 2]);
  });

  it('row objects carry the response time when the declaration asks for it', () => {
    const t = toTable(
      decl,
      [w],
      {},
      { ...opts, includeObject: 'Metadata', creationTimestamp: 'T' },
    );
    expect(t.rows[0]!.object).toMatchObject({ metadata: { name: 'w1', creationTimestamp: 'T' } });
  });
});
