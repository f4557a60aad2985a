import { describe, expect, it } from 'vitest';
import { podQosClass } from './server-fields.js';
import { goJson, goYamlKeyCompare, toKubectlYaml } from './yaml.js';
import type { JsonObject } from './util.js';

describe('podQosClass', () => {
  const pod = (resources: JsonObject): JsonObject => ({ containers: [{ name: 'c', resources }] });
  it('classifies', () => {
    expect(podQosClass(pod({}))).toBe('BestEffort');
    expect(podQosClass(pod({ requests: { cpu: '100m' } }))).toBe('Burstable');
    expect(
      podQosClass(
        pod({ limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '1', memory: '1Gi' } }),
      ),
    ).toBe('Guaranteed');
    expect(podQosClass(pod({ requests: { 'nvidia.com/gpu': '1' } }))).toBe('BestEffort');
  });
});

describe('go-yaml key order', () => {
  it('sorts like go-yaml v2: non-letters first, digit runs numerically', () => {
    const keys = ['b', 'a10', 'a9', 'a.b', 'A', 'a_b', 'ab'];
    expect([...keys].sort(goYamlKeyCompare)).toEqual(['A', 'a.b', 'a_b', 'a9', 'a10', 'ab', 'b']);
  });
});

describe('toKubectlYaml', () => {
  it('prints like kubectl: sorted keys, unindented sequences, go-yaml quoting', () => {
    const text = toKubectlYaml({
      spec: { b: [{ y: 1, x: 'true' }], a: '' },
      metadata: { t: '2026-09-26T17:17:28Z', n: null, e: {}, l: [], s: '*.x', m: 'a\nb\n' },
    });
    expect(text).toBe(
      [
        'metadata:',
        '  e: {}',
        '  l: []',
        '  m: |',
        '    a',
        '    b',
        '  "n": null',
        "  s: '*.x'",
        '  t: "2026-09-26T17:17:28Z"',
        'spec:',
        '  a: ""',
        '  b:',
        '  - x: "true"',
        '    "y": 1',
        '',
      ].join('\n'),
    );
  });
});

describe('goJson', () => {
  it('sorts keys by bytes (integer-like keys too) and escapes HTML characters', () => {
    expect(goJson({ b: 1, '9': 2, '10': 3, a: '<&>' })).toBe(
      '{"10":3,"9":2,"a":"\\u003c\\u0026\\u003e","b":1}',
    );
  });
  it('indents like MarshalIndent', () => {
    expect(goJson({ a: [1], b: {} }, '    ')).toBe(
      '{\n    "a": [\n        1\n    ],\n    "b": {}\n}',
    );
  });
});
