// The install (`kubectl apply -k manifests/`) renders with the control plane's own kubectl
// (kustomize inside), and the real API server accepts every object in a server dry run.
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { renderBundle } from '../../src/install/bundle.js';
import { declarationsOf, renderObjects, serviceRefOf } from '../../src/manifests/render.js';
import { builtinFeatures } from '../../src/server/builtins.js';
import { ensureAnnexService } from '../cluster/annex.js';
import { describeCluster, kubectl, kubectlOk, waitForCondition } from '../cluster/harness.js';

const repo = join(import.meta.dirname, '..', '..');

describeCluster('manifests/ (kustomize base)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'annex-manifests-'));
    for (const d of ['manifests', 'apiservice', 'webhooks'])
      cpSync(join(repo, d), join(dir, d), { recursive: true });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('renders every object in its namespace, with the auth reader binding in kube-system', async () => {
    const objs = parseAllDocuments(await kubectlOk(['kustomize', join(dir, 'manifests')])).map(
      (d) => d.toJSON(),
    );
    const where = Object.fromEntries(
      objs.map((o) => [
        `${o.kind}/${o.metadata.name.replace(/-[a-z0-9]{10}$/, '')}`,
        o.metadata.namespace ?? '',
      ]),
    );
    expect(where).toMatchObject({
      'Namespace/annex-system': '',
      'ServiceAccount/annex': 'annex-system',
      'RoleBinding/annex:extension-apiserver-authentication-reader': 'kube-system',
      'Deployment/annex': 'annex-system',
      'Service/annex': 'annex-system',
      'ConfigMap/annex-config': 'annex-system',
      'ClusterRole/annex:registration': '',
      'ClusterRole/annex:metrics-scraper': '',
      'PodDisruptionBudget/annex': 'annex-system',
      'Secret/annex-tls': 'annex-system',
      'Lease/annex-tls': 'annex-system',
      'Role/annex:shared-ca': 'annex-system',
      'CustomResourceDefinition/admissionpolicies.policy.annex.dev': '',
    });
    // Registration follows readiness: kubectl creates placeholders only — no webhook to
    // call, no caBundle; annex applies the real objects once ready. One webhook must hold
    // from the start (ExternalMetric authors): without a caBundle its writes fail until then.
    for (const o of objs.filter((o) => o.kind.endsWith('WebhookConfiguration'))) {
      if (o.metadata.name === 'annex-externalmetrics') {
        expect(o.webhooks).toHaveLength(1);
        expect(o.webhooks[0].failurePolicy).toBe('Fail');
        expect(o.webhooks[0].clientConfig).not.toHaveProperty('caBundle');
      } else expect(o.webhooks).toEqual([]);
    }
    for (const o of objs.filter((o) => o.kind === 'APIService'))
      expect(o.spec).not.toHaveProperty('caBundle');
    for (const o of objs)
      expect([o.kind, o.metadata.labels]).toMatchObject([
        o.kind,
        { 'app.kubernetes.io/name': 'annex', 'app.kubernetes.io/part-of': 'annex' },
      ]);
    const deploy = objs.find((o) => o.kind === 'Deployment');
    expect(deploy.spec).toMatchObject({
      replicas: 2,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0 } },
      template: {
        spec: {
          priorityClassName: 'system-cluster-critical',
          nodeSelector: { 'kubernetes.io/os': 'linux' },
        },
      },
    });
    const anti = deploy.spec.template.spec.affinity.podAntiAffinity;
    expect(anti.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm).toEqual({
      topologyKey: 'kubernetes.io/hostname',
      labelSelector: { matchLabels: deploy.spec.selector.matchLabels },
    });
    const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget');
    expect(pdb.spec).toEqual({ minAvailable: 1, selector: deploy.spec.selector });
    expect(
      deploy.spec.template.spec.volumes.find((v: any) => v.name === 'config').configMap.name,
    ).toMatch(/^annex-config-[a-z0-9]{10}$/);
  });

  it('ships a config whose registrations are exactly what annex:registration allows, by name', async () => {
    const config = loadConfig({ file: join(repo, 'manifests', 'config.yaml') });
    expect(config.registration.apply).toBe(true);
    const rendered = renderObjects(declarationsOf(builtinFeatures(config)), serviceRefOf(config));
    const objs = parseAllDocuments(await kubectlOk(['kustomize', join(dir, 'manifests')])).map(
      (d) => d.toJSON(),
    );
    const role = objs.find(
      (o) => o.kind === 'ClusterRole' && o.metadata.name === 'annex:registration',
    );
    // Order is not meaningful in RBAC: compare names sorted.
    const byResource = Object.fromEntries(
      role.rules.map((r: any) => [r.resources.join(), [r.verbs, [...r.resourceNames].sort()]]),
    );
    const names = (kind: string) =>
      rendered
        .filter((o: any) => o.kind === kind)
        .map((o: any) => o.metadata.name)
        .sort();
    const placeholders = (kind: string) =>
      objs
        .filter((o) => o.kind === kind)
        .map((o) => o.metadata.name)
        .sort();
    for (const k of [
      'APIService',
      'ValidatingWebhookConfiguration',
      'MutatingWebhookConfiguration',
    ])
      expect(placeholders(k)).toEqual(names(k));
    expect(byResource).toEqual({
      apiservices: [['patch'], names('APIService')],
      validatingwebhookconfigurations: [['patch'], names('ValidatingWebhookConfiguration')],
      mutatingwebhookconfigurations: [['patch'], names('MutatingWebhookConfiguration')],
    });
  });

  it('annex install applies exactly what kubectl kustomize renders (one source)', async () => {
    const strip = (o: any) => JSON.parse(JSON.stringify(o));
    const key = (o: any) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    const byKey = (l: any[]) => Object.fromEntries(l.map((o) => [key(o), strip(o)]));
    const kustomized = parseAllDocuments(
      await kubectlOk(['kustomize', join(dir, 'manifests')]),
    ).map((d) => d.toJSON());
    expect(byKey(renderBundle({ dir: join(dir, 'manifests') }))).toEqual(byKey(kustomized));
  });

  it("grants annex's ServiceAccount what it needs and nothing around it", async () => {
    await ensureAnnexService(); // the namespace
    await kubectlOk(['apply', '-f', join(dir, 'manifests', 'rbac.yaml')]);
    // annex:registration is rendered with the placeholders: its RBAC only, not them.
    const registrationRbac = parseAllDocuments(
      readFileSync(join(dir, 'manifests', 'registrations.yaml'), 'utf8'),
    )
      .map((d) => d.toJSON())
      .filter((o) => o.kind.startsWith('ClusterRole'));
    expect(registrationRbac).toHaveLength(2);
    await kubectlOk(['apply', '-f', '-'], {
      input: registrationRbac.map((o) => JSON.stringify(o)).join('\n---\n'),
    });
    // can-i resolves a custom resource through discovery: the CRD must be served.
    await kubectlOk(['apply', '-f', join(dir, 'manifests', 'crds', 'admissionpolicies.yaml')]);
    await kubectlOk(['apply', '-f', join(dir, 'manifests', 'crds', 'externalmetrics.yaml')]);
    await kubectlOk(['apply', '-f', join(dir, 'manifests', 'crds', 'policyexceptions.yaml')]);
    await waitForCondition(
      [
        'crd/admissionpolicies.policy.annex.dev',
        'crd/externalmetrics.metrics.annex.dev',
        'crd/policyexceptions.policy.annex.dev',
      ],
      'Established',
    );
    const sa = '--as=system:serviceaccount:annex-system:annex';
    const can = async (...args: string[]) =>
      (await kubectl(['auth', 'can-i', ...args, sa])).stdout.trim();
    const yes = [
      ['create', 'tokenreviews.authentication.k8s.io'],
      ['create', 'subjectaccessreviews.authorization.k8s.io'],
      ['get', 'configmaps/extension-apiserver-authentication', '-n', 'kube-system'],
      ['watch', 'configmaps/extension-apiserver-authentication', '-n', 'kube-system'],
      ['list', 'nodes'],
      ['get', 'nodes/metrics'],
      ['list', 'pods', '--all-namespaces'],
      ['patch', 'apiservices.apiregistration.k8s.io/v1beta1.metrics.annex.dev'],
      ['patch', 'validatingwebhookconfigurations.admissionregistration.k8s.io/annex-names'],
      ['update', 'secrets/annex-tls', '-n', 'annex-system'],
      ['get', 'leases.coordination.k8s.io/annex-tls', '-n', 'annex-system'],
      ['update', 'leases.coordination.k8s.io/annex-tls', '-n', 'annex-system'],
      ['patch', 'mutatingwebhookconfigurations.admissionregistration.k8s.io/annex-defaults'],
      ['watch', 'admissionpolicies.policy.annex.dev'],
      ['patch', 'admissionpolicies.policy.annex.dev', '--subresource=status'],
      ['watch', 'policyexceptions.policy.annex.dev', '--all-namespaces'],
      ['patch', 'policyexceptions.policy.annex.dev', '--subresource=status', '-n', 'default'],
      ['patch', 'validatingwebhookconfigurations.admissionregistration.k8s.io/annex-policies'],
      ['create', 'events.events.k8s.io', '-n', 'default'],
      ['list', 'endpointslices.discovery.k8s.io', '-n', 'annex-system'],
      ['watch', 'externalmetrics.metrics.annex.dev', '--all-namespaces'],
      ['patch', 'externalmetrics.metrics.annex.dev', '--subresource=status', '-n', 'default'],
      ['list', 'jobs.batch', '--all-namespaces'],
    ];
    const no = [
      ['patch', 'apiservices.apiregistration.k8s.io/v1.apps'],
      // The shared metric groups are opt-in (scaling.registerMetricsApis): KEDA's, not annex's.
      ['patch', 'apiservices.apiregistration.k8s.io/v1beta1.external.metrics.k8s.io'],
      ['patch', 'apiservices.apiregistration.k8s.io/v1beta1.metrics.k8s.io'],
      ['patch', 'validatingwebhookconfigurations.admissionregistration.k8s.io/someone-else'],
      ['create', 'apiservices.apiregistration.k8s.io'],
      ['create', 'validatingwebhookconfigurations.admissionregistration.k8s.io'],
      ['get', 'apiservices.apiregistration.k8s.io/v1beta1.metrics.annex.dev'],
      ['delete', 'mutatingwebhookconfigurations.admissionregistration.k8s.io/annex-defaults'],
      ['get', 'secrets', '--all-namespaces'],
      ['get', 'secrets/other', '-n', 'annex-system'],
      ['create', 'secrets', '-n', 'annex-system'],
      ['update', 'leases.coordination.k8s.io/kube-scheduler', '-n', 'kube-system'],
      ['get', 'configmaps', '-n', 'default'],
      ['create', 'pods', '-n', 'annex-system'],
      ['delete', 'nodes'],
      ['patch', 'admissionpolicies.policy.annex.dev'],
      ['patch', 'externalmetrics.metrics.annex.dev', '-n', 'default'],
      // annex reads exceptions; it never writes one (nor exempts anything on its own).
      ['create', 'policyexceptions.policy.annex.dev', '-n', 'default'],
      ['patch', 'policyexceptions.policy.annex.dev', '-n', 'default'],
    ];
    for (const a of yes) expect([a.join(' '), await can(...a)]).toEqual([a.join(' '), 'yes']);
    for (const a of no) expect([a.join(' '), await can(...a)]).toEqual([a.join(' '), 'no']);
    // The HPA controller's ServiceAccount reads both metric groups (as KEDA binds it). A
    // SubjectAccessReview, as the aggregated server asks: can-i would need discovery.
    for (const group of ['external.metrics.k8s.io', 'custom.metrics.k8s.io']) {
      const review = JSON.parse(
        await kubectlOk(['create', '-f', '-', '-o', 'json'], {
          input: JSON.stringify({
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: 'system:serviceaccount:kube-system:horizontal-pod-autoscaler',
              groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system'],
              resourceAttributes: {
                group,
                resource: 'queue_depth',
                verb: 'list',
                namespace: 'shop',
              },
            },
          }),
        }),
      );
      expect([group, review.status.allowed]).toEqual([group, true]);
    }
    // The scraper role, bound to a Prometheus ServiceAccount, allows /metrics and no more.
    const prom = ['--as=system:serviceaccount:monitoring:prometheus'];
    const canProm = async (...a: string[]) =>
      (await kubectl(['auth', 'can-i', ...a, ...prom])).stdout.trim();
    expect(await canProm('get', '/metrics')).toBe('no');
    await kubectlOk([
      'create',
      'clusterrolebinding',
      'test:annex-scraper',
      '--clusterrole=annex:metrics-scraper',
      '--serviceaccount=monitoring:prometheus',
    ]);
    try {
      expect(await canProm('get', '/metrics')).toBe('yes');
      expect(await canProm('list', 'nodes.metrics.annex.dev')).toBe('no');
    } finally {
      await kubectlOk(['delete', 'clusterrolebinding', 'test:annex-scraper']);
    }
    // Exceptions are written by whom an admin binds the editor role to, in that namespace only.
    const canAlice = async (...a: string[]) =>
      (await kubectl(['auth', 'can-i', ...a, '--as=alice'])).stdout.trim();
    const polex = 'policyexceptions.policy.annex.dev';
    expect(await canAlice('create', polex, '-n', 'default')).toBe('no');
    await kubectlOk([
      'create',
      'rolebinding',
      'test:exceptions',
      '-n',
      'default',
      '--clusterrole=annex:policyexceptions-editor',
      '--user=alice',
    ]);
    try {
      expect(await canAlice('create', polex, '-n', 'default')).toBe('yes');
      expect(await canAlice('create', polex, '-n', 'annex-system')).toBe('no');
      expect(await canAlice('patch', `${polex}`, '--subresource=status', '-n', 'default')).toBe(
        'no',
      );
    } finally {
      await kubectlOk(['delete', 'rolebinding', 'test:exceptions', '-n', 'default']);
    }
  });

  it('is accepted whole by the real API server (server-side dry run)', async () => {
    // A dry run creates no namespace, so annex-system must exist; and the e2e tests'
    // ExternalName Service has the same name as the real one: set it aside meanwhile.
    await ensureAnnexService();
    await kubectlOk(['-n', 'annex-system', 'delete', 'service', 'annex', '--ignore-not-found']);
    try {
      const r = await kubectl(['apply', '-k', join(dir, 'manifests'), '--dry-run=server']);
      expect(r.stderr).toBe('');
      const lines = r.stdout.trim().split('\n');
      expect(lines.every((l) => l.endsWith('(server dry run)'))).toBe(true);
      expect(lines).toContain('deployment.apps/annex created (server dry run)');
      expect(lines).toContain(
        'apiservice.apiregistration.k8s.io/v1beta1.metrics.annex.dev created (server dry run)',
      );
      // The CRD may already be served (the RBAC test above installs it for can-i).
      expect(
        lines.some((l) =>
          /^customresourcedefinition\.apiextensions\.k8s\.io\/admissionpolicies\.policy\.annex\.dev (created|configured|unchanged) \(server dry run\)$/.test(
            l,
          ),
        ),
      ).toBe(true);
      expect(
        lines.some((l) =>
          /^customresourcedefinition\.apiextensions\.k8s\.io\/externalmetrics\.metrics\.annex\.dev (created|configured|unchanged) \(server dry run\)$/.test(
            l,
          ),
        ),
      ).toBe(true);
      expect(lines).toContain('poddisruptionbudget.policy/annex created (server dry run)');
      // The shared metric groups are opt-in (scaling.registerMetricsApis): the base leaves
      // KEDA's and prometheus-adapter's APIServices alone.
      expect(lines.filter((l) => /\.metrics\.k8s\.io /.test(l))).toEqual([]);
      // 37, and the PolicyException CRD with its editor and reader ClusterRoles.
      expect(lines).toHaveLength(40);
    } finally {
      await ensureAnnexService();
    }
  });
});
