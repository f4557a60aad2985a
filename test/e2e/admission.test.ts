// annex's webhooks registered in a real kube-apiserver, from the repo's own YAML
// (webhooks/), reached through the ExternalName Service annex.annex-system → localhost.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  pointAtTestAnnex,
  repoManifest,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { createNamespace, describeCluster, kubectl } from '../cluster/harness.js';

describeCluster('admission webhooks against the real API server', () => {
  let annex: TestAnnex;
  let ns: string;
  let configs: any[];

  beforeAll(async () => {
    annex = await startTestAnnex();
    await ensureAnnexService();
    configs = pointAtTestAnnex(
      [
        ...repoManifest('webhooks/validating-names.yaml'),
        ...repoManifest('webhooks/mutating-defaults.yaml'),
      ],
      annex.port,
      annex.caBundle,
    );
    await applyObjects(configs);
    ns = await createNamespace('adm');
    // The API server picks up new webhook configurations asynchronously.
    await waitForWebhook(ns);
  });

  afterAll(async () => {
    if (configs) await deleteObjects(configs);
    await annex?.stop();
  });

  it('denies a Deployment named web.front with the DNS-label message, as built-in validation prints it', async () => {
    const r = await kubectl(['-n', ns, 'create', 'deployment', 'web.front', '--image=nginx:1.27']);
    expect(r.code).not.toBe(0);
    // annex's defaults warning (the mutating webhook runs first), the API server's own
    // warning for a non-label Deployment name, then annex's denial.
    // `kubectl create` prints err.Error(), which carries the API server's webhook prefix;
    // `kubectl apply` (below) renders details.causes exactly like built-in validation.
    expect(r.stderr.trim().split('\n')).toEqual([
      'Warning: annex: container "nginx" had no cpu/memory request; defaulted to cpu=100m, memory=128Mi',
      'Warning: metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]',
      'error: failed to create deployment: admission webhook "names.annex.dev" denied the request: Deployment.apps "web.front" is invalid: metadata.name: Invalid value: "web.front": must not contain dots',
    ]);
    const file = JSON.stringify({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web.front' },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
        },
      },
    });
    const applied = await kubectl(['-n', ns, 'apply', '-f', '-'], { input: file });
    expect(applied.code).not.toBe(0);
    expect(applied.stderr.trim().split('\n')).toEqual([
      'Warning: annex: container "web" had no cpu/memory request; defaulted to cpu=100m, memory=128Mi',
      'Warning: metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]',
      'The Deployment "web.front" is invalid: metadata.name: Invalid value: "web.front": must not contain dots',
    ]);
  });

  it("adds annex's defaults to a bare Pod in a server-side dry run", async () => {
    const run = await kubectl([
      '-n',
      ns,
      'run',
      'nu',
      '--image=nginx:1.27',
      '--dry-run=server',
      '-o',
      'yaml',
    ]);
    expect(run.code).toBe(0);
    // annex says what it added: kubectl prints the webhook's warnings.
    expect(run.stderr.trim()).toBe(
      'Warning: annex: container "nu" had no cpu/memory request; defaulted to cpu=100m, memory=128Mi',
    );
    const out = run.stdout;
    const pod = parse(out);
    expect(pod.metadata.labels).toMatchObject({
      run: 'nu',
      'app.kubernetes.io/managed-by': 'annex',
    });
    expect(pod.spec.containers[0].resources).toEqual({
      requests: { cpu: '100m', memory: '128Mi' },
    });
    // Dry run: nothing was stored.
    const get = await kubectl(['-n', ns, 'get', 'pod', 'nu']);
    expect(get.stderr).toContain('NotFound');
  });

  it('refuses references the API server itself lets through (volumes, imagePullSecrets)', async () => {
    // Without annex the API server accepts these names, and the Pods then wait forever
    // for a ConfigMap, Secret or claim that can never exist.
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'api' },
      spec: {
        selector: { matchLabels: { app: 'api' } },
        template: {
          metadata: { labels: { app: 'api' } },
          spec: {
            imagePullSecrets: [{ name: 'Registry_Creds' }],
            volumes: [
              { name: 'conf', configMap: { name: 'Api_Config' } },
              { name: 'data', persistentVolumeClaim: { claimName: 'data.v1' } },
            ],
            containers: [{ name: 'api', image: 'nginx:1.27' }],
          },
        },
      },
    };
    const r = await kubectl(['-n', ns, 'apply', '-f', '-', '--dry-run=server'], {
      input: JSON.stringify(deployment),
    });
    expect(r.code).not.toBe(0);
    const SUBDOMAIN =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    expect(r.stderr).toContain(
      [
        'The Deployment "api" is invalid: ',
        `* spec.template.spec.imagePullSecrets[0].name: Invalid value: "Registry_Creds": ${SUBDOMAIN}`,
        `* spec.template.spec.volumes[0].configMap.name: Invalid value: "Api_Config": ${SUBDOMAIN}`,
      ].join('\n'),
    );
    // A subdomain is a valid claim name: data.v1 passes.
    expect(r.stderr).not.toContain('data.v1');
  });

  it('never receives requests from kube-system', async () => {
    const r = await kubectl([
      '-n',
      'kube-system',
      'create',
      'deployment',
      'sys.tem',
      '--image=nginx:1.27',
      '--dry-run=server',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('deployment.apps/sys.tem created (server dry run)');
  });
});

/** Retries a denied create until the API server has loaded the webhook configuration. */
async function waitForWebhook(ns: string): Promise<void> {
  let last = '';
  for (let i = 0; i < 60; i++) {
    const r = await kubectl([
      '-n',
      ns,
      'create',
      'deployment',
      'probe.x',
      '--image=x',
      '--dry-run=server',
    ]);
    if (r.stderr.includes('names.annex.dev')) return;
    last = r.stderr || r.stdout;
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error(`the API server never called annex; last answer: ${last}`);
}
