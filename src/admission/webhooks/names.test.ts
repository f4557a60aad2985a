import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../review.js';
import { checkNames } from './names.js';

const req = (
  kind: string,
  group: string,
  object: any,
  operation: 'CREATE' | 'UPDATE' = 'CREATE',
): AdmissionRequest => ({
  uid: 'u',
  kind: { group, version: 'v1', kind },
  resource: { group, version: 'v1', resource: `${kind.toLowerCase()}s` },
  operation,
  namespace: 'ns',
  name: object.metadata.name,
  object,
});

const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

describe('names webhook', () => {
  it('denies a Deployment whose name is not a DNS-1123 label, as built-in validation words it', () => {
    const v = checkNames(req('Deployment', 'apps', { metadata: { name: 'web.front' }, spec: {} }));
    expect(v.allowed).toBe(false);
    if (v.allowed) return;
    // Kubernetes' special case: a valid subdomain whose only fault is dots.
    expect(v.status.message).toBe(
      'Deployment.apps "web.front" is invalid: metadata.name: Invalid value: "web.front": must not contain dots',
    );
    expect(v.status.details?.causes).toEqual([
      {
        reason: 'FieldValueInvalid',
        field: 'metadata.name',
        message: 'Invalid value: "web.front": must not contain dots',
      },
    ]);
    const upper = checkNames(req('StatefulSet', 'apps', { metadata: { name: 'Web_1' } }));
    expect(upper.allowed ? '' : upper.status.message).toBe(
      `StatefulSet.apps "Web_1" is invalid: metadata.name: Invalid value: "Web_1": ${LABEL_MSG}`,
    );
  });

  it('allows label names, and does not judge names on UPDATE', () => {
    expect(checkNames(req('Deployment', 'apps', { metadata: { name: 'web-front' } })).allowed).toBe(
      true,
    );
    expect(
      checkNames(req('Deployment', 'apps', { metadata: { name: 'web.front' } }, 'UPDATE')).allowed,
    ).toBe(true);
    expect(checkNames(req('ConfigMap', '', { metadata: { name: 'a.b' } })).allowed).toBe(true);
  });

  it('checks names referenced from pod templates with the rule of the kind they name', () => {
    const v = checkNames(
      req('Deployment', 'apps', {
        metadata: { name: 'web' },
        spec: {
          template: {
            spec: {
              serviceAccountName: 'Robot',
              volumes: [
                { name: 'a', configMap: { name: 'ok.cm' } },
                { name: 'b', persistentVolumeClaim: { claimName: 'Data_1' } },
              ],
              containers: [{ name: 'c', envFrom: [{ secretRef: { name: 'bad_secret' } }] }],
            },
          },
        },
      }),
    );
    expect(v.allowed).toBe(false);
    if (v.allowed) return;
    expect(v.status.details?.causes?.map((c) => c.field)).toEqual([
      'spec.template.spec.serviceAccountName',
      'spec.template.spec.volumes[1].persistentVolumeClaim.claimName',
      'spec.template.spec.containers[0].envFrom[0].secretRef.name',
    ]);
    expect(v.status.message).toMatch(
      /^Deployment\.apps "web" is invalid: \[spec\.template\.spec\.serviceAccountName: Invalid value: "Robot": a lowercase RFC 1123 subdomain/,
    );
  });

  it('finds the pod spec of a CronJob', () => {
    const v = checkNames(
      req('CronJob', 'batch', {
        metadata: { name: 'nightly' },
        spec: {
          jobTemplate: {
            spec: { template: { spec: { imagePullSecrets: [{ name: 'Reg' }], containers: [] } } },
          },
        },
      }),
    );
    expect(v.allowed).toBe(false);
    if (!v.allowed)
      expect(v.status.details?.causes?.[0]?.field).toBe(
        'spec.jobTemplate.spec.template.spec.imagePullSecrets[0].name',
      );
  });
});

describe('names webhook: a huge invalid name', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;

  it('builds the denial of a 6.5 MiB name in memory proportional to its text', () => {
    const name = 'Web_'.repeat(1.625 * 2 ** 20);
    const r = req('Deployment', 'apps', { metadata: { name } });
    gc();
    const before = process.memoryUsage().heapUsed;
    const v = checkNames(r);
    gc();
    const held = process.memoryUsage().heapUsed - before;
    expect(v.allowed).toBe(false);
    // The text is the API server's (the name is repeated, here 6 times)...
    const text = JSON.stringify(v);
    expect(text.length).toBeGreaterThan(6 * name.length);
    expect(text.length).toBeLessThan(7 * name.length);
    // ...but what the verdict holds is a few copies of the name, not a rope of it.
    expect(held).toBeLessThan(8 * name.length);
  });
});
