// `annex install` → annex started as its Pod would be (in-cluster, the manifests' RBAC
// only) registers itself once ready → install returns; the webhook acts and the APIService
// serves; `annex uninstall` removes the registrations first and leaves nothing labelled
// app.kubernetes.io/name=annex behind. No controller-manager runs here: there is no
// Deployment controller (the test starts the "pod" itself) and no namespace controller
// (the test finalizes the emptied namespace, as that controller would).
import { spawn } from 'node:child_process';
import { afterAll, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { freePort } from '../cluster/control-plane.js';
import { cli, runCli, expectOneLineError } from '../cluster/cli.js';
import { createNamespace, describeCluster, kubectl, kubectlOk } from '../cluster/harness.js';
import { canRunAsPod, eventually, startAnnexPod, type AnnexPod } from '../cluster/pod.js';

const NS = 'annex-it';

/** Every object of every listable kind that carries annex's name label, as kind/name lines. */
async function annexLabelled(): Promise<string[]> {
  const kinds = (await kubectlOk(['api-resources', '--verbs=list', '-o', 'name']))
    .trim()
    .split('\n');
  const r = await kubectl([
    'get',
    kinds.join(','),
    '-A',
    '-l',
    'app.kubernetes.io/name=annex',
    '-o',
    'name',
  ]);
  return r.stdout.trim().split('\n').filter(Boolean);
}

/** The namespace controller's last step, for an emptied namespace stuck in Terminating. */
async function finalizeNamespace(ns: string): Promise<void> {
  const r = await kubectl(['get', 'namespace', ns, '-o', 'json']);
  if (r.code !== 0) return;
  const o = JSON.parse(r.stdout);
  o.spec.finalizers = [];
  await kubectlOk(['replace', '--raw', `/api/v1/namespaces/${ns}/finalize`, '-f', '-'], {
    input: JSON.stringify(o),
  });
}

describeCluster('annex install / uninstall against the real control plane', (c) => {
  let pod: AnnexPod | undefined;
  afterAll(async () => {
    await pod?.stop('SIGKILL');
    await runCli(['uninstall', '--kubeconfig', c.adminKubeconfig, '-n', NS, '--wait', '2']);
    await finalizeNamespace(NS);
  });

  it('refuses a bad namespace in one line', async () => {
    const r = await runCli(['install', '--kubeconfig', c.adminKubeconfig, '-n', 'Bad_NS']);
    expect(expectOneLineError(r)).toContain('is not a valid namespace name');
  });

  it.runIf(canRunAsPod())(
    'installs, registers once ready, acts, and uninstalls without leftovers',
    async () => {
      const port = await freePort();
      const install = spawn(
        process.execPath,
        [
          cli,
          'install',
          '--kubeconfig',
          c.adminKubeconfig,
          '-n',
          NS,
          '--image',
          'localhost/annex:test',
          '--wait',
          '90',
        ],
        { env: { ...process.env, KUBECONFIG: '' } },
      );
      let out = '';
      install.stdout.on('data', (d) => (out += d));
      install.stderr.on('data', (d) => (out += d));
      const installed = new Promise<number | null>((r) => install.on('exit', r));

      // What the Deployment controller and kubelet would do: once the Deployment exists,
      // run its container. The API server reaches it through an ExternalName Service
      // (nothing may leave loopback), on the port annex registers.
      await eventually(
        async () => (await kubectl(['-n', NS, 'get', 'deployment', 'annex'])).code === 0,
        30_000,
        'the Deployment',
      );
      expect(out).not.toContain('registered by annex');
      const deploy = JSON.parse(
        await kubectlOk(['-n', NS, 'get', 'deployment', 'annex', '-o', 'json']),
      );
      expect(deploy.spec.template.spec.containers[0].image).toBe('localhost/annex:test');
      await kubectlOk(['-n', NS, 'delete', 'service', 'annex']);
      await kubectlOk([
        '-n',
        NS,
        'create',
        'service',
        'externalname',
        'annex',
        '--external-name=localhost',
      ]);
      const cmName = deploy.spec.template.spec.volumes.find((v: any) => v.name === 'config')
        .configMap.name;
      const cm = JSON.parse(await kubectlOk(['-n', NS, 'get', 'configmap', cmName, '-o', 'json']));
      const config = parse(cm.data['annex.yaml']);
      expect(config.registration.apply).toBe(true);
      expect(config.tls.namespace).toBe(NS);
      // No kubelets here: the local metrics source, and a short drain for the test.
      config.metrics = { source: 'local', scrapeIntervalSeconds: 1, localNamespace: NS };
      config.server.shutdownDelaySeconds = 1;
      pod = await startAnnexPod({
        namespace: NS,
        serviceAccount: 'annex',
        configYaml: stringify(config),
        args: ['--host', '127.0.0.1', '--port', String(port)],
      });

      const code = await installed;
      expect([code, out], pod.output()).toEqual([
        0,
        expect.stringContaining('registered by annex'),
      ]);
      expect(out).toMatch(
        /^waiting for annex to become ready and register .*validatingwebhookconfiguration\/annex-names[,\n]/m,
      );
      const hook = JSON.parse(
        await kubectlOk([
          'get',
          'validatingwebhookconfiguration',
          'annex-names',
          '-o',
          'json',
          '--show-managed-fields',
        ]),
      );
      expect(hook.metadata.managedFields.map((f: any) => f.manager)).toContain('annex');
      expect(hook.webhooks[0].clientConfig.service).toEqual({
        namespace: NS,
        name: 'annex',
        port,
        path: '/validate/names',
      });
      expect(hook.webhooks[0].namespaceSelector.matchExpressions[0].values).toEqual([
        'kube-system',
        NS,
      ]);

      // The webhook acts, and the aggregated API answers through the APIService.
      const ns = await createNamespace('annex-it-user');
      await eventually(
        async () =>
          (
            await kubectl(['-n', ns, 'create', 'deployment', 'web.front', '--image=nginx:1.27'])
          ).stderr.includes('admission webhook "names.annex.dev" denied the request'),
        20_000,
        'the names webhook to deny web.front',
      );
      const nodes = JSON.parse(
        await kubectlOk(['get', '--raw', '/apis/metrics.annex.dev/v1beta1/nodes']),
      );
      expect(nodes.kind).toBe('NodeMetricsList');

      // Upgrade path: `annex install` again (same or newer manifests) leaves annex's own
      // registrations in place — the placeholders' empty webhook lists own nothing.
      const again = await runCli([
        'install',
        '--kubeconfig',
        c.adminKubeconfig,
        '-n',
        NS,
        '--wait',
        '30',
      ]);
      expect([again.code, again.stdout]).toEqual([
        0,
        expect.stringContaining('registered by annex'),
      ]);
      const still = JSON.parse(
        await kubectlOk(['get', 'validatingwebhookconfiguration', 'annex-names', '-o', 'json']),
      );
      expect(still.webhooks).toHaveLength(1);

      const un = await runCli([
        'uninstall',
        '--kubeconfig',
        c.adminKubeconfig,
        '-n',
        NS,
        '--wait',
        '2',
      ]);
      expect(un.code).toBe(0);
      const deleted = un.stdout
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('deleted '));
      const firstOther = deleted.findIndex(
        (l) =>
          !/^deleted (mutatingwebhookconfiguration|validatingwebhookconfiguration|apiservice)\//.test(
            l,
          ),
      );
      // Every registration first: the placeholders the base ships, whichever features it enables.
      const registrations = parseAllDocuments(
        readFileSync(
          join(import.meta.dirname, '..', '..', 'manifests', 'registrations.yaml'),
          'utf8',
        ),
      )
        .map((d) => d.toJSON())
        // The file also holds their RBAC (annex:registration), removed later with the rest.
        .filter((o: any) => /^(APIService|\w+WebhookConfiguration)$/.test(o.kind))
        .map((o: any) => `deleted ${o.kind.toLowerCase()}/${o.metadata.name}`)
        .sort();
      expect(registrations.length).toBeGreaterThan(3);
      expect(deleted.slice(0, firstOther).sort()).toEqual(registrations);
      expect(deleted).toContain(`deleted namespace/${NS}`);
      expect(un.stdout).toContain(`namespace/${NS} is still terminating`);

      // Then the kubelet stops the container: SIGTERM drains and exits 0.
      expect(await pod.stop('SIGTERM')).toBe(0);
      expect(pod.output()).toContain('shut down');
      await finalizeNamespace(NS);
      await eventually(
        async () => (await kubectl(['get', 'namespace', NS])).code !== 0,
        10_000,
        'the namespace to go',
      );
      expect(await annexLabelled()).toEqual([]);
    },
  );
});
