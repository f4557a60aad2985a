import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load.js';
import { builtinFeatures } from '../server/builtins.js';
import {
  foreignApiServices,
  isAnnexApiService,
  refusal,
  sharedGroups,
  sharedGroupUnits,
  type ApiServiceLike,
  type OwnershipGate,
} from './ownership.js';
import { declarationsOf, registrationRbac, serviceRefOf } from './render.js';

const service = { namespace: 'annex-system', name: 'annex', port: 8443 };
const ANNEX = { 'app.kubernetes.io/name': 'annex' };
const api = (
  name: string,
  svc: { namespace: string; name: string } | null,
  labels?: Record<string, string>,
): ApiServiceLike => ({
  metadata: { name, ...(labels ? { labels } : {}) },
  spec: { group: name.split('.').slice(1).join('.'), service: svc },
});

describe('ownership of shared groups', () => {
  it("is annex's only when labelled as annex's and pointing at annex's Service", () => {
    expect(isAnnexApiService(api('v1.metrics.k8s.io', service, ANNEX), service)).toBe(true);
    // KEDA's, labelled by an older `kubectl apply -k` of annex's base, still KEDA's.
    const keda = { namespace: 'keda', name: 'keda-operator-metrics-apiserver' };
    expect(isAnnexApiService(api('v1beta1.external.metrics.k8s.io', keda, ANNEX), service)).toBe(
      false,
    );
    expect(isAnnexApiService(api('v1.metrics.k8s.io', service), service)).toBe(false);
    expect(isAnnexApiService(api('v1.metrics.k8s.io', null, ANNEX), service)).toBe(false);
    expect(
      isAnnexApiService(
        api('v1.metrics.k8s.io', { namespace: 'other', name: 'annex' }, ANNEX),
        service,
      ),
    ).toBe(false);
  });

  it('checks every version of the group, and only that group', () => {
    const ms = { namespace: 'kube-system', name: 'metrics-server' };
    const items = [
      api('v1beta1.metrics.k8s.io', ms),
      api('v1.metrics.k8s.io', service, ANNEX),
      api('v1beta1.metrics.annex.dev', service, ANNEX),
      api('v1beta1.custom.metrics.k8s.io', ms),
      api('v1.apps', null),
    ];
    expect(
      foreignApiServices(items, 'metrics.k8s.io', service).map((a) => a.metadata.name),
    ).toEqual(['v1beta1.metrics.k8s.io']);
    expect(foreignApiServices(items, 'external.metrics.k8s.io', service)).toEqual([]);
    expect(foreignApiServices(items, 'metrics.annex.dev', service)).toEqual([]);
    // A group the API server serves itself is not annex's either.
    expect(foreignApiServices(items, 'apps', service)).toHaveLength(1);
  });

  it('says in one line who owns the group and which switch replaces it', () => {
    const keda = api('v1beta1.external.metrics.k8s.io', {
      namespace: 'keda',
      name: 'keda-operator-metrics-apiserver',
    });
    const line = refusal('external.metrics.k8s.io', [keda]);
    expect(line).toBe(
      'external.metrics.k8s.io not registered: already served by another owner (APIService v1beta1.external.metrics.k8s.io → keda/keda-operator-metrics-apiserver); remove it, or list external.metrics.k8s.io in registration.replaceOwners to replace it',
    );
    expect(line).not.toContain('\n');
  });

  it('gates each shared group alone: metrics.k8s.io, external. and custom.metrics.k8s.io', () => {
    const config = loadConfig({
      overrides: {
        metrics: { registerMetricsK8sIo: true },
        scaling: { enabled: true },
      },
    });
    const features = builtinFeatures(config);
    const groups = declarationsOf(features).groups;
    expect(sharedGroups(groups).map((g) => g.group)).toEqual([
      'metrics.k8s.io',
      'external.metrics.k8s.io',
      'custom.metrics.k8s.io',
    ]);
    const allowed = new Set(['custom.metrics.k8s.io']);
    const gate: OwnershipGate = { allows: (g) => allowed.has(g), report: () => '', stop() {} };
    const scaling = declarationsOf(features.filter((f) => f.name === 'scaling')).groups;
    const units = sharedGroupUnits('scaling', scaling, service, () => true, gate);
    expect(units.map((u) => [u.name, u.ready(), u.objects().map((o) => o.metadata)])).toEqual([
      [
        'scaling/external.metrics.k8s.io',
        false,
        [expect.objectContaining({ name: 'v1beta1.external.metrics.k8s.io' })],
      ],
      [
        'scaling/custom.metrics.k8s.io',
        true,
        [expect.objectContaining({ name: 'v1beta2.custom.metrics.k8s.io' })],
      ],
    ]);
    expect(sharedGroupUnits('scaling', scaling, service, () => false, gate)[1]!.ready()).toBe(
      false,
    );
  });

  it('scaling.registerMetricsApis: false declares neither metrics API', () => {
    const config = loadConfig({
      overrides: { scaling: { enabled: true, registerMetricsApis: false } },
    });
    const scaling = builtinFeatures(config).find((f) => f.name === 'scaling')!;
    expect(scaling.groups).toEqual([]);
    expect(scaling.webhooks).toHaveLength(1);
  });

  it('annex:registration reads APIServices only when a shared group is declared', () => {
    const rules = (o: Parameters<typeof loadConfig>[0]) => {
      const config = loadConfig(o);
      const role = registrationRbac(
        declarationsOf(builtinFeatures(config)),
        serviceRefOf(config),
      )[0] as {
        rules: { resources: string[]; verbs: string[]; resourceNames?: string[] }[];
      };
      return role.rules.filter((r) => r.resources[0] === 'apiservices');
    };
    expect(rules({})).toEqual([
      expect.objectContaining({ resourceNames: ['v1beta1.metrics.annex.dev'], verbs: ['patch'] }),
    ]);
    expect(rules({ overrides: { scaling: { enabled: true } } })).toEqual([
      expect.objectContaining({
        resourceNames: [
          'v1beta1.external.metrics.k8s.io',
          'v1beta1.metrics.annex.dev',
          'v1beta2.custom.metrics.k8s.io',
        ],
        verbs: ['patch'],
      }),
      {
        apiGroups: ['apiregistration.k8s.io'],
        resources: ['apiservices'],
        verbs: ['list', 'watch'],
      },
    ]);
  });
});
