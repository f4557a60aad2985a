import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { validatingWebhook } from '../admission/webhook.js';
import { ALL_BUILTINS, basePlaceholders, PLACEHOLDERS_FILE } from '../cli/manifests.js';
import { loadConfig } from '../config/load.js';
import { builtinFeatures } from '../server/builtins.js';
import { crdConversion } from '../conversion/declare.js';
import {
  apiServices,
  crdConversionSpec,
  customResourceDefinition,
  declarationsOf,
  renderFiles,
  serviceRefOf,
  webhookConfiguration,
} from './render.js';

const repo = join(import.meta.dirname, '..', '..');
const config = loadConfig({ overrides: ALL_BUILTINS });

describe('the committed registration YAML', () => {
  const files = renderFiles(declarationsOf(builtinFeatures(config)), serviceRefOf(config));

  it('covers every built-in webhook and group', () => {
    expect([...files.keys()].sort()).toEqual([
      'apiservice/audit-annex-dev/apiservice.yaml',
      'apiservice/custom-metrics-k8s-io/apiservice.yaml',
      'apiservice/external-metrics-k8s-io/apiservice.yaml',
      'apiservice/metrics-annex-dev/apiservice.yaml',
      'apiservice/metrics-k8s-io/apiservice.yaml',
      'webhooks/mutating-defaults.yaml',
      'webhooks/mutating-externalmetrics.yaml',
      'webhooks/mutating-policies.yaml',
      'webhooks/validating-admissionpolicies.yaml',
      'webhooks/validating-names.yaml',
      'webhooks/validating-policies.yaml',
    ]);
  });

  it.each([...files.keys()])('%s is the rendering of the declarations (npm run manifests)', (f) => {
    expect(readFileSync(join(repo, f), 'utf8')).toBe(files.get(f));
  });

  it('manifests/registrations.yaml is the rendering for manifests/config.yaml', async () => {
    expect(readFileSync(join(repo, PLACEHOLDERS_FILE), 'utf8')).toBe(await basePlaceholders());
  });

  it('placeholders call nothing, except a webhook that must hold before annex answers (no caBundle: it fails)', () => {
    const placeholders = parseAllDocuments(readFileSync(join(repo, PLACEHOLDERS_FILE), 'utf8'))
      .map((d) => d.toJS())
      .filter((o) => o.kind.endsWith('WebhookConfiguration'));
    const calling = placeholders.filter((o) => o.webhooks.length > 0);
    expect(calling.map((o) => o.metadata.name)).toEqual(['annex-externalmetrics']);
    expect(calling[0].webhooks).toEqual([
      expect.objectContaining({
        failurePolicy: 'Fail',
        clientConfig: {
          service: expect.objectContaining({ path: '/mutate/externalmetrics.metrics.annex.dev' }),
        },
      }),
    ]);
    expect(placeholders.length).toBeGreaterThan(1);
  });

  it('every rendered file is part of a kustomization', () => {
    for (const f of files.keys()) {
      const dir = f.slice(0, f.lastIndexOf('/'));
      const k = parse(readFileSync(join(repo, dir, 'kustomization.yaml'), 'utf8'));
      expect(k.resources).toContain(f.slice(dir.length + 1));
    }
    expect(existsSync(join(repo, 'apiservice', 'kustomization.yaml'))).toBe(true);
  });
});

describe('rendering', () => {
  const service = { namespace: 'tools', name: 'hooks', port: 9443 };
  const hook = validatingWebhook({
    name: 'pinned.example.com',
    match: { kinds: ['Pod', 'apps/Deployment', 'StatefulSet'] },
    admit: () => ({ allowed: true }),
  });

  it('turns match.kinds into one rule per group/version, with the admissionregistration defaults', () => {
    const cfg = webhookConfiguration(hook, service) as any;
    expect(cfg.kind).toBe('ValidatingWebhookConfiguration');
    expect(cfg.metadata.name).toBe('annex-pinned');
    const [w] = cfg.webhooks;
    expect(w).toMatchObject({
      name: 'pinned.example.com',
      clientConfig: { service: { ...service, path: '/validate/pinned.example.com' } },
      failurePolicy: 'Fail',
      matchPolicy: 'Equivalent',
      sideEffects: 'None',
      timeoutSeconds: 10,
      admissionReviewVersions: ['v1', 'v1beta1'],
    });
    expect(w.rules).toEqual([
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: [''],
        apiVersions: ['v1'],
        resources: ['pods'],
      },
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: ['apps'],
        apiVersions: ['v1'],
        resources: ['deployments', 'statefulsets'],
      },
    ]);
    // annex's own namespace is never sent to annex, whatever it is called.
    expect(w.namespaceSelector.matchExpressions[0].values).toEqual(['kube-system', 'tools']);
    expect(w.reinvocationPolicy).toBeUndefined();
  });

  const same = { toHub: (o: any) => o, fromHub: (o: any) => o };
  const schema = { openAPIV3Schema: { type: 'object' } };
  const owned = crdConversion({
    group: 'example.com',
    kind: 'CronTab',
    plural: 'crontabs',
    hub: 'v1',
    versions: { v1beta1: same },
    crd: {
      shortNames: ['ct'],
      versions: [
        { name: 'v1beta1', storage: true, schema },
        { name: 'v1', served: false, storage: false, schema },
      ],
    },
  });
  const conversion = {
    strategy: 'Webhook',
    webhook: {
      clientConfig: { service: { ...service, path: '/convert/crontabs.example.com' } },
      conversionReviewVersions: ['v1'],
    },
  };

  it('renders the whole CRD with its conversion when the declaration owns it', () => {
    expect(customResourceDefinition(owned, service)).toEqual({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'crontabs.example.com' },
      spec: {
        group: 'example.com',
        names: {
          plural: 'crontabs',
          singular: 'crontab',
          kind: 'CronTab',
          listKind: 'CronTabList',
          shortNames: ['ct'],
        },
        scope: 'Namespaced',
        versions: [
          { name: 'v1beta1', served: true, storage: true, schema },
          { name: 'v1', served: false, storage: false, schema },
        ],
        conversion,
      },
    });
  });

  it('renders only spec.conversion (for server-side apply) when someone else owns the CRD', () => {
    const notOwned = { ...owned, crd: undefined };
    expect(customResourceDefinition(notOwned, service)).toEqual({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'crontabs.example.com' },
      spec: { conversion },
    });
    expect(crdConversionSpec(owned, { url: 'https://127.0.0.1:8443/' })).toEqual({
      strategy: 'Webhook',
      webhook: {
        clientConfig: { url: 'https://127.0.0.1:8443/convert/crontabs.example.com' },
        conversionReviewVersions: ['v1'],
      },
    });
  });

  it('grants get/patch on exactly the declared CRDs, for tls.inject.crds', () => {
    const files = renderFiles({ webhooks: [], groups: [], conversions: [owned] }, service);
    const objs = parseAllDocuments(files.get('conversions/conversions.yaml')!).map((d) =>
      d.toJSON(),
    );
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'CustomResourceDefinition/crontabs.example.com',
      'ClusterRole/annex:crd-ca-injector',
      'ClusterRoleBinding/annex:crd-ca-injector',
    ]);
    expect(objs[1].rules).toEqual([
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: ['crontabs.example.com'],
        verbs: ['get', 'patch'],
      },
    ]);
    expect(objs[2].subjects).toEqual([
      { kind: 'ServiceAccount', name: 'hooks', namespace: 'tools' },
    ]);
  });

  it('gives the first version the highest priority unless told otherwise', () => {
    const g = { group: 'x.example.com', versions: ['v2', 'v1'], resources: [] };
    expect(
      apiServices(g, service).map((a: any) => [a.metadata.name, a.spec.versionPriority]),
    ).toEqual([
      ['v2.x.example.com', 200],
      ['v1.x.example.com', 100],
    ]);
  });
});
