// The demo policies in policies/, each against small good and bad manifests, through the
// same path as `annex check` (defaults, name validation, then the policies as installed:
// those CEL can express by the API server, the others by annex's webhook).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../admission/defaults/index.js';
import { checkObject } from '../cli/check.js';
import { loadPolicies } from './load.js';

const folder = join(import.meta.dirname, '..', '..', 'policies');
const all = loadPolicies([folder]);
const only = (name: string) => all.filter((p) => p.name === name);
const check = (policy: string, obj: JsonObject, native = true) =>
  checkObject(obj, only(policy), 'test', { namespace: 'shop', native });

function deployment(
  name: string,
  containers: JsonObject[],
  extra: { labels?: Record<string, string>; hostNetwork?: boolean } = {},
): JsonObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, ...(extra.labels ? { labels: extra.labels } : {}) },
    spec: {
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers,
          ...(extra.hostNetwork !== undefined ? { hostNetwork: extra.hostNetwork } : {}),
        },
      },
    },
  };
}
const c = (image: string, more: JsonObject = {}): JsonObject => ({ name: 'c', image, ...more });

describe('the demo policies', () => {
  it('are the five of the folder, all compiled', () => {
    expect(all.map((p) => [p.name, p.actions.join(',')])).toEqual([
      ['app-name-label', 'Warn'],
      ['default-requests', 'Deny'],
      ['host-network', 'Audit'],
      ['pinned-images', 'Deny'],
      ['workload-names', 'Deny'],
    ]);
  });

  it('workload-names: DNS-1123 labels, with the API server’s message', () => {
    expect(check('workload-names', deployment('web', [c('x:1')])).allowed).toBe(true);
    // A ValidatingAdmissionPolicy by default: the API server's envelope around the same text.
    expect(check('workload-names', deployment('web.front', [c('x:1')])).message).toBe(
      `The deployments "web.front" is invalid: : ValidatingAdmissionPolicy 'annex-workload-names' with binding 'annex-workload-names-binding' denied request: metadata.name: Invalid value: "web.front": must not contain dots`,
    );
    expect(check('workload-names', deployment('web.front', [c('x:1')]), false).message).toBe(
      'The Deployment "web.front" is invalid: metadata.name: Invalid value: "web.front": must not contain dots',
    );
    const job = { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'a.b' }, spec: {} };
    expect(check('workload-names', job).allowed).toBe(false);
    // Not a workload: ConfigMaps keep the subdomain rule.
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a.b' } };
    expect(check('workload-names', cm).allowed).toBe(true);
  });

  it('pinned-images: a tag other than latest, or a digest, on every container', () => {
    const digest = `nginx@sha256:${'a'.repeat(64)}`;
    for (const image of ['nginx:1.27', 'registry:5000/team/app:v2', digest]) {
      expect(check('pinned-images', deployment('web', [c(image)])).allowed, image).toBe(true);
    }
    const r = check(
      'pinned-images',
      deployment('web', [c('nginx:1.27'), c('nginx'), c('nginx:latest'), c('registry:5000/app')]),
    );
    expect(r.status?.details?.causes?.map((x) => `${x.field}: ${x.message}`)).toEqual(
      [1, 2, 3].map(
        (i) =>
          `spec.template.spec.containers[${i}].image: Invalid value: "${['nginx', 'nginx:latest', 'registry:5000/app'][i - 1]}": must be pinned to a tag other than latest, or to a digest`,
      ),
    );
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: { initContainers: [c('busybox')], containers: [c('x:1')] },
    };
    expect(check('pinned-images', pod).message).toContain(
      'spec.initContainers[0].image: Invalid value: "busybox"',
    );
  });

  it('app-name-label: a warning, never a denial', () => {
    const bad = check('app-name-label', deployment('web', [c('x:1')]));
    expect(bad.allowed).toBe(true);
    expect(bad.warnings).toEqual([
      "Validation failed for ValidatingAdmissionPolicy 'annex-app-name-label' with binding 'annex-app-name-label-binding': metadata.labels[app.kubernetes.io/name]: Required value",
    ]);
    expect(check('app-name-label', deployment('web', [c('x:1')]), false).warnings).toEqual([
      'app-name-label: metadata.labels[app.kubernetes.io/name]: Required value',
    ]);
    const good = deployment('web', [c('x:1')], { labels: { 'app.kubernetes.io/name': 'web' } });
    expect(check('app-name-label', good).warnings).toEqual([]);
  });

  it('default-requests: sets absent requests only', () => {
    const r = check(
      'default-requests',
      deployment('web', [c('x:1'), c('y:1', { resources: { requests: { cpu: '2' } } })]),
    );
    expect(r.patch).toEqual([
      {
        op: 'add',
        path: '/spec/template/spec/containers/1/resources/requests/memory',
        value: '128Mi',
      },
      {
        op: 'add',
        path: '/spec/template/spec/containers/0/resources/requests',
        value: { cpu: '100m', memory: '128Mi' },
      },
    ]);
    const full = { resources: { requests: { cpu: '1', memory: '1Gi' } } };
    expect(check('default-requests', deployment('web', [c('x:1', full)])).patch).toBeUndefined();
  });

  it('host-network: recorded as an Audit decision, allowed, no warning', () => {
    const r = check('host-network', deployment('web', [c('x:1')], { hostNetwork: true }));
    expect(r.allowed).toBe(true);
    expect(r.warnings).toEqual([]);
    expect(r.decisions).toEqual([
      {
        policy: 'host-network',
        rule: 'no-host-network',
        action: 'Audit',
        causes: [
          {
            field: 'spec.template.spec.hostNetwork',
            message: "Invalid value: true: shares the node's network",
          },
        ],
      },
    ]);
    const off = deployment('web', [c('x:1')], { hostNetwork: false });
    expect(check('host-network', off).decisions).toEqual([]);
  });

  it('together, on the webhook: defaults applied before validation, Deny wins, warnings kept', () => {
    const r = checkObject(deployment('web.front', [c('nginx')]), all, 'test', {
      namespace: 'shop',
      native: false,
    });
    expect(r.allowed).toBe(false);
    expect(r.message.split('\n')).toEqual([
      'The Deployment "web.front" is invalid: ',
      '* spec.template.spec.containers[0].image: Invalid value: "nginx": must be pinned to a tag other than latest, or to a digest',
      '* metadata.name: Invalid value: "web.front": must not contain dots',
    ]);
    expect(r.warnings).toHaveLength(1);
  });

  it('together, as installed: the VAP refuses before the webhook is called', () => {
    const r = checkObject(deployment('web.front', [c('nginx')]), all, 'test', {
      namespace: 'shop',
    });
    expect(r.allowed).toBe(false);
    // workload-names is a ValidatingAdmissionPolicy, pinned-images stays on the webhook
    // (`..` has no CEL form): the API server's VAP plugin runs first and stops the request.
    expect(r.message).toBe(
      `The deployments "web.front" is invalid: : ValidatingAdmissionPolicy 'annex-workload-names' with binding 'annex-workload-names-binding' denied request: metadata.name: Invalid value: "web.front": must not contain dots`,
    );
    expect(r.warnings).toEqual([
      "Validation failed for ValidatingAdmissionPolicy 'annex-app-name-label' with binding 'annex-app-name-label-binding': metadata.labels[app.kubernetes.io/name]: Required value",
    ]);
    // Only the webhook's own denial when no VAP refuses.
    const pinned = checkObject(deployment('web', [c('nginx')]), all, 'test', { namespace: 'shop' });
    expect(pinned.message).toBe(
      'The Deployment "web" is invalid: spec.template.spec.containers[0].image: Invalid value: "nginx": must be pinned to a tag other than latest, or to a digest',
    );
  });
});
