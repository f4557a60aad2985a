import { describe, expect, it } from 'vitest';
import { LAST_APPLIED, ObjectsError, parseObjects, renderText } from './render.js';
import type { RenderOptions } from './render.js';

const podNu = `apiVersion: v1
kind: Pod
metadata:
  name: nu
spec:
  containers:
  - name: c
    image: registry.k8s.io/e2e-test-images/agnhost:2.61
`;

const fixed: RenderOptions = {
  admissionPlugins: true,
  lastApplied: true,
  namespace: 'default',
  output: 'yaml',
  now: new Date('2026-09-26T17:17:28Z'),
  uid: '0b5e4a1c-0000-4000-8000-000000000000',
  randomSuffix: () => '75xck',
};

describe('renderText', () => {
  // The chapter's `wc -l` says 9 for the file shown in 8 lines (presumably a trailing blank line).
  it('turns the seed bare Pod into the 64 lines of the chapter', () => {
    const text = renderText(parseObjects(podNu, 'pod-nu.yaml'), fixed);
    expect(text.trimEnd().split('\n')).toHaveLength(64);
    const head = text.slice(0, text.indexOf('spec:'));
    expect(head).toBe(
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata:',
        '  annotations:',
        `    ${LAST_APPLIED}: |`,
        '      {"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{},"name":"nu","namespace":"default"},"spec":{"containers":[{"image":"registry.k8s.io/e2e-test-images/agnhost:2.61","name":"c"}]}}',
        '  creationTimestamp: "2026-09-26T17:17:28Z"',
        '  generation: 1',
        '  name: nu',
        '  namespace: default',
        '  uid: 0b5e4a1c-0000-4000-8000-000000000000',
        '',
      ].join('\n'),
    );
    expect(text).toContain('  - mountPath: /var/run/secrets/kubernetes.io/serviceaccount\n');
    expect(text.endsWith('status:\n  phase: Pending\n  qosClass: BestEffort\n')).toBe(true);
  });

  it('separates documents with --- and prints JSON with 4 spaces', () => {
    const objs = parseObjects(
      `${podNu}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n`,
      'f',
    );
    expect(objs).toHaveLength(2);
    const yaml = renderText(objs, { ...fixed, lastApplied: false });
    expect(yaml.split('\n---\n')).toHaveLength(2);
    expect(yaml).not.toContain(LAST_APPLIED);
    const json = renderText(objs.slice(1), { ...fixed, output: 'json', lastApplied: false });
    expect(json).toBe(
      '{\n    "apiVersion": "v1",\n    "kind": "ConfigMap",\n    "metadata": {\n        "creationTimestamp": "2026-09-26T17:17:28Z",\n        "name": "c",\n        "namespace": "default",\n        "uid": "0b5e4a1c-0000-4000-8000-000000000000"\n    }\n}\n',
    );
  });

  it('Deployment: status {} and template metadata kept, no namespace on cluster-scoped kinds', () => {
    const text = renderText(
      parseObjects(
        '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}\n---\n{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}',
        'f.json',
      ),
      { ...fixed, lastApplied: false, uid: false },
    );
    expect(text).toContain('  progressDeadlineSeconds: 600\n');
    expect(text).toContain('status: {}\n---\n');
    expect(text).toContain('      maxSurge: 25%\n');
    const ns = text.split('---\n')[1] ?? '';
    expect(ns).not.toContain('namespace:');
    expect(ns).toContain('spec:\n  finalizers:\n  - kubernetes\nstatus:\n  phase: Active\n');
  });
});

describe('parseObjects errors name the file', () => {
  it.each([
    ['a: [', /^bad\.yaml: not valid YAML or JSON: /],
    ['kind: Pod', /^bad\.yaml: not a Kubernetes object: missing apiVersion$/],
    ['apiVersion: v1', /^bad\.yaml: not a Kubernetes object: missing kind$/],
    ['- 1', /^bad\.yaml: not a Kubernetes object/],
    ['', /^bad\.yaml: no Kubernetes object found$/],
  ])('%j', (text, message) => {
    expect(() => parseObjects(text, 'bad.yaml')).toThrow(ObjectsError);
    expect(() => parseObjects(text, 'bad.yaml')).toThrow(message);
  });
  it('numbers the document in a multi-document file', () => {
    expect(() => parseObjects(`${podNu}---\nkind: X\n`, 'm.yaml')).toThrow(
      'm.yaml (document 2): not a Kubernetes object: missing apiVersion',
    );
  });
});
