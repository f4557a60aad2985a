// `annex install` → annex started as its Pod would be (in-cluster, the manifests' RBAC
// only) registers itself once ready → install returns; the webhook acts and the APIService
// serves; `annex uninstall` removes the registrations first and leaves nothing labelled
// app.kubernetes.io/name=annex behind. No controller-manager runs here: there is no
// Deployment controller (the test starts the "pod" itself) and no namespace controller
// (the test finalizes the emptied namespace, as that controller would).
import { get as httpsGet } from 'node:https';
import { afterAll, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { freePort } from '../cluster/control-plane.js';
import { runCli, expectOneLineError } from '../cluster/cli.js';
import {
  createNamespace,
  describeCluster,
  finalizeNamespace,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';
import { installAsPod, machineOverrides } from '../cluster/install.js';
import { expectRecorded } from '../docs/acceptance.js';
import { canRunAsPod, eventually, type AnnexPod } from '../cluster/pod.js';

const NS = 'annex-it';
const ROOT = join(import.meta.dirname, '..', '..');

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
      const { pod: started, ...install } = await installAsPod({
        cluster: c,
        namespace: NS,
        image: 'localhost/annex:test',
        // The rest (registration.apply, policy with native enforcement, scaling, the shared
        // CA) as shipped.
        overrides: machineOverrides(c, { port, namespace: NS, kubelets: 'none' }),
      });
      pod = started;
      expect(install.outBeforePod).not.toContain('registered by annex');
      expect(install.deployment.spec.template.spec.containers[0].image).toBe(
        'localhost/annex:test',
      );
      expect(install.installedConfig.registration.apply).toBe(true);
      expect(install.installedConfig.tls.namespace).toBe(NS);
      expect([install.code, install.out], pod.output()).toEqual([
        0,
        expect.stringContaining('registered by annex'),
      ]);
      // What a user sees, in the namespace the install defaults to.
      const asUserSees = (text: string) => text.replace(/\bannex-it\b(?!-)/g, 'annex-system');
      expectRecorded(
        'docs/install.md',
        'test/e2e/install.test.ts',
        'annex install --image localhost/annex:test',
        asUserSees(install.out),
      );
      expect(install.out).toMatch(
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
        path: '/validate/names.annex.dev',
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

      // The demo policies as the docs apply them: each enforced by the path its status
      // claims, once annex has observed that path in the API server.
      await kubectlOk(['apply', '-f', join(ROOT, 'policies')]);
      const shipped = readdirSync(join(ROOT, 'policies')).filter((f) => f.endsWith('.yaml'));
      await waitForCondition(['admissionpolicies', '--all'], 'Enforced', { timeoutMs: 60_000 });
      // /readyz?verbose names no policy as not yet enforced once every one is.
      const readyz = await new Promise<string>((resolve, reject) =>
        httpsGet(
          { host: '127.0.0.1', port, path: '/readyz?verbose', rejectUnauthorized: false },
          (res) => {
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve(body));
          },
        ).on('error', reject),
      );
      expect(readyz).toMatch(/^\[\+\]policy ok$/m);
      const policies = JSON.parse(await kubectlOk(['get', 'admissionpolicies', '-o', 'json']))
        .items as any[];
      expect(policies).toHaveLength(shipped.length);
      const by = Object.fromEntries(policies.map((p) => [p.metadata.name, p.status]));
      for (const s of Object.values(by) as any[]) {
        expect(s.conditions.map((x: any) => [x.type, x.status])).toEqual([
          ['Ready', 'True'],
          ['Enforced', 'True'],
        ]);
      }
      // The regexp lookahead, Audit and mutate rules stay on annex's webhook.
      for (const name of ['pinned-images', 'host-network', 'default-requests'])
        expect([name, by[name].enforcedBy]).toEqual([name, 'webhook']);
      const table = await kubectlOk(['get', 'admissionpolicies']);
      expect(table).toMatch(/^NAME\s+MODE\s+KINDS\s+READY\s+ENFORCED\s+ENFORCED BY\s+AGE$/m);
      expect(table).toMatch(
        /^default-requests\s+Mutate\s+Pod,apps\/Deployment,\S+\s+True\s+True\s+webhook\s/m,
      );
      expect(table).toMatch(/^pinned-images\s+Deny\s+Pod,\S+\s+True\s+True\s+webhook\s/m);
      const policyHook = JSON.parse(
        await kubectlOk(['get', 'validatingwebhookconfiguration', 'annex-policies', '-o', 'json']),
      );
      expect(policyHook.webhooks[0]).toMatchObject({ sideEffects: 'NoneOnDryRun' });
      expect(policyHook.webhooks[0].rules.length).toBeGreaterThan(0);

      const deny = await kubectl([
        '-n',
        ns,
        'create',
        'deployment',
        'web',
        '--image=nginx:latest',
        '--dry-run=server',
      ]);
      expect([deny.code, deny.stderr]).toEqual([1, expect.stringContaining('must be pinned')]);
      const warn = await kubectl([
        '-n',
        ns,
        'create',
        'deployment',
        'web',
        '--image=nginx:1.27',
        '--dry-run=server',
      ]);
      expect([warn.code, warn.stderr]).toEqual([0, expect.stringMatching(/^Warning: .*app-name/m)]);
      const defaulted = JSON.parse(
        await kubectlOk([
          '-n',
          ns,
          'run',
          'p',
          '--image=nginx:1.27',
          '--dry-run=server',
          '-o',
          'json',
        ]),
      );
      expect(defaulted.spec.containers[0].resources.requests).toEqual({
        cpu: '100m',
        memory: '128Mi',
      });
      // Audit: allowed, and recorded (the API server's reviews carry its client certificate).
      await kubectlOk([
        '-n',
        ns,
        'run',
        'hn',
        '--image=nginx:1.27',
        '--overrides={"spec":{"hostNetwork":true}}',
      ]);
      await eventually(
        async () =>
          (await kubectlOk(['get', 'admissionevents', '-n', ns])).includes('host-network'),
        20_000,
        'the Audit decision in admissionevents',
      );
      /** app-name-label enforced by `by`, as annex observed it. */
      const appNameLabelOn = (by: string) =>
        eventually(
          async () => {
            const s = JSON.parse(
              await kubectlOk(['get', 'admissionpolicy', 'app-name-label', '-o', 'json']),
            ).status;
            return (
              s.enforcedBy === by &&
              s.conditions.some((x: any) => x.type === 'Enforced' && x.status === 'True')
            );
          },
          30_000,
          `app-name-label enforced by ${by}`,
        );
      // A PolicyException, with the shipped RBAC: annex watches it and writes its status; the
      // native policy it names moves to annex's webhook; the exempted object is let through.
      await kubectlOk(['apply', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'policy.annex.dev/v1alpha1',
          kind: 'PolicyException',
          metadata: { name: 'legacy', namespace: ns },
          spec: {
            reason: 'legacy images until the migration',
            exceptions: [
              { policyName: 'pinned-images', ruleNames: ['containers'] },
              { policyName: 'app-name-label' },
            ],
            match: { any: [{ resources: { kinds: ['apps/Deployment'], names: ['legacy-*'] } }] },
          },
        }),
      });
      await waitForCondition([`policyexception/legacy`, '-n', ns], 'Ready', { timeoutMs: 30_000 });
      await appNameLabelOn('webhook');
      let exempted = { code: -1, stdout: '', stderr: '' };
      await eventually(
        async () => {
          exempted = await kubectl([
            '-n',
            ns,
            'create',
            'deployment',
            'legacy-web',
            '--image=nginx:latest',
            '--dry-run=server',
          ]);
          // The API server drops the deleted VAP (and its warning) on its own timer.
          return exempted.code === 0 && !exempted.stderr.includes('app-name');
        },
        30_000,
        'legacy-web exempted',
      );
      expect(exempted.stdout).toContain('created (server dry run)');
      await eventually(
        async () =>
          /Exempt\s+pinned-images\s+containers\s+Deployment\s+legacy-web/.test(
            await kubectlOk(['get', 'admissionevents', '-n', ns]),
          ),
        20_000,
        'the Exempt decision in admissionevents',
      );
      // The exception gone, app-name-label returns to the API server.
      await kubectlOk(['delete', 'policyexception', 'legacy', '-n', ns]);
      await appNameLabelOn('ValidatingAdmissionPolicy');
      expect(pod.output()).not.toMatch(
        /cannot update the policy webhook rules|registration failed/,
      );

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
      expectRecorded(
        'docs/install.md',
        'test/e2e/install.test.ts',
        'annex uninstall',
        asUserSees(un.stdout + un.stderr),
      );
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
      // The ValidatingAdmissionPolicies annex created for its policies go too.
      expect(
        (
          await kubectlOk([
            'get',
            'validatingadmissionpolicies,validatingadmissionpolicybindings',
            '-l',
            'policy.annex.dev/policy',
            '-o',
            'name',
          ])
        ).trim(),
      ).toBe('');
    },
  );
});
