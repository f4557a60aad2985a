// PolicyExceptions against the real kube-apiserver, with the policy section of the shipped
// configuration (manifests/config.yaml: policy.native on, so a policy that compiles to CEL
// is a ValidatingAdmissionPolicy). An exception naming such a policy moves it to annex's
// webhook — which honours the exception and records each use (admissionevents, Events) —
// and its status says so; the exception's own status says whether what it names exists;
// an exception exempts nothing outside its namespace; a policy can refuse exceptions; and
// with the exception gone the policy returns to the API server.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { POLICY_LABEL } from '../../src/policy/cel/index.js';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  featureRegistrations,
  installPolicyCrd,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import {
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';

const repo = join(import.meta.dirname, '..', '..');
const shipped = parse(readFileSync(join(repo, 'manifests', 'config.yaml'), 'utf8'));

describeCluster('PolicyExceptions, live, as shipped', () => {
  let ns = '';
  let other = '';
  let annex: TestAnnex | undefined;
  let registered: any[] = [];

  const policy = (name: string, extra: object = {}) => ({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec: {
      match: { kinds: ['apps/Deployment'], namespaces: [ns, other] },
      actions: ['Deny'],
      validate: [
        { name: 'team', path: '$.metadata.labels.team', required: true },
        { name: 'dns-label', path: '$.metadata.name', nameRule: 'dns1123Label' },
      ],
      ...extra,
    },
  });
  const exception = (name: string, spec: object, namespace = ns) => ({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'PolicyException',
    metadata: { name, namespace },
    spec: {
      reason: 'legacy workloads, labelled by JIRA-123 before March',
      match: { any: [{ resources: { kinds: ['apps/Deployment'], names: ['legacy-*'] } }] },
      ...spec,
    },
  });
  const getJson = async (...args: string[]) =>
    JSON.parse(await kubectlOk(['get', ...args, '-o', 'json']));
  const create = (namespace: string, name: string, dryRun = false) =>
    kubectl([
      'create',
      'deployment',
      name,
      '-n',
      namespace,
      '--image=nginx:1.27',
      ...(dryRun ? ['--dry-run=server'] : []),
    ]);
  const statusOf = (name: string) => getJson('admissionpolicy', name).then((p) => p.status ?? {});
  const ready = (o: any) => o.status?.conditions?.find((c: any) => c.type === 'Ready');
  /** The policy's status once it says `by` enforces it and annex observed that path. */
  const enforcedBy = (name: string, by: 'ValidatingAdmissionPolicy' | 'webhook') =>
    eventually(async () => {
      const st = await statusOf(name);
      const enforced = st.conditions?.find((c: any) => c.type === 'Enforced');
      return st.enforcedBy === by && enforced?.status === 'True' ? st : undefined;
    }, 30_000);

  beforeAll(async () => {
    ns = await createNamespace('exceptions');
    other = await createNamespace('exceptions-other');
    await installPolicyCrd();
    expect(shipped.policy.enabled).toBe(true);
    expect(shipped.policy.native).toBeUndefined(); // the default: on
    annex = await startTestAnnex({
      admission: { names: { enabled: false }, defaults: { enabled: false } },
      metrics: { enabled: false },
      policy: shipped.policy,
    } as any);
    registered = featureRegistrations(annex, 'policy', {
      webhooks: ['policies.annex.dev'],
      namespace: ns,
    });
    // Both test namespaces reach the webhook: an exception of one must not exempt the other's.
    for (const o of registered)
      for (const w of o.webhooks ?? [])
        if (w.name === 'policies.annex.dev')
          w.namespaceSelector = {
            matchExpressions: [
              { key: 'kubernetes.io/metadata.name', operator: 'In', values: [ns, other] },
            ],
          };
    await ensureAnnexService();
    await applyObjects(registered);
    await waitForCondition(['apiservice/v1alpha1.audit.annex.dev'], 'Available');
  }, 120_000);

  afterAll(async () => {
    await kubectl(['delete', 'policyexceptions', '--all', '-A', '--ignore-not-found']);
    await kubectl(['delete', 'admissionpolicies', '--all', '--ignore-not-found']);
    for (const kind of ['validatingadmissionpolicybindings', 'validatingadmissionpolicies'])
      await kubectl(['delete', kind, '-l', POLICY_LABEL, '--ignore-not-found']);
    await deleteObjects(registered);
    await kubectl(['delete', 'namespace', ns, other, '--wait=false']);
    await annex?.stop();
  });

  it('a policy an exception names leaves its ValidatingAdmissionPolicy for the webhook, and says so', async () => {
    await applyObjects([policy('require-team')]);
    await enforcedBy('require-team', 'ValidatingAdmissionPolicy');
    // The API server enforces it: legacy-web, without a team label, is refused by the VAP.
    const refused = await eventually(async () => {
      const r = await create(ns, 'legacy-web', true);
      return r.code !== 0 ? r : undefined;
    }, 20_000);
    expect(refused.stderr).toContain("ValidatingAdmissionPolicy 'annex-require-team'");

    await applyObjects([
      exception('legacy', { exceptions: [{ policyName: 'require-team', ruleNames: ['team'] }] }),
    ]);
    const s = await enforcedBy('require-team', 'webhook');
    expect(s.webhookReason).toBe(
      `PolicyExceptions name it (${ns}/legacy): annex honours and records them`,
    );
    // annex removed the VAP it had made of the policy.
    await eventually(async () => {
      const left = await kubectlOk([
        'get',
        'validatingadmissionpolicies',
        '-l',
        `${POLICY_LABEL}=require-team`,
        '-o',
        'name',
      ]);
      return left.trim() === '' ? true : undefined;
    }, 20_000);
  });

  it("the exception's status names what it exempts from, Ready with a reason; kubectl prints the columns", async () => {
    const ex = await eventually(async () => {
      const o = await getJson('policyexception', 'legacy', '-n', ns);
      return ready(o) ? o : undefined;
    }, 20_000);
    expect(ready(ex)).toMatchObject({
      status: 'True',
      reason: 'PoliciesFound',
      observedGeneration: ex.metadata.generation,
    });
    const table = await kubectlOk(['get', 'polex', '-n', ns, '-o', 'wide']);
    const [head, row] = table.trim().split('\n');
    expect(head).toMatch(/^NAME\s+POLICIES\s+READY\s+REASON\s+AGE$/);
    expect(row).toMatch(/^legacy\s+require-team\[team\]\s+True\s+legacy workloads, labelled/);
  });

  it('the exempted object is admitted, the rest of the policy still applies, and another namespace is not exempted', async () => {
    // The API server drops a deleted VAP on its own timer: wait until the dry run passes.
    await eventually(
      async () => ((await create(ns, 'legacy-web', true)).code === 0 ? true : undefined),
      30_000,
    );
    const ok = await create(ns, 'legacy-web');
    expect(ok.code).toBe(0);
    // Not named by the exception: refused by annex's webhook now.
    const web = await create(ns, 'web');
    expect(web.code).toBe(1);
    expect(web.stderr).toContain('admission webhook "policies.annex.dev" denied the request');
    expect(web.stderr).toContain('metadata.labels[team]: Required value');
    // Named, but the rule not exempted still holds: a dotted name fails dns-label.
    const dotted = await create(ns, 'legacy-web.v2');
    expect(dotted.code).toBe(1);
    expect(dotted.stderr).toContain('metadata.name: Invalid value: "legacy-web.v2"');
    expect(dotted.stderr).not.toContain('metadata.labels[team]');
    // The same name in another namespace: the exception does not reach it.
    const elsewhere = await create(other, 'legacy-web');
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain('metadata.labels[team]: Required value');
  });

  it('every use is an Exempt decision in admissionevents and a PolicyExempted Event', async () => {
    const decision = await eventually(async () => {
      const list = await getJson(
        'admissionevents',
        '-n',
        ns,
        '--field-selector',
        'decision=Exempt',
      );
      return list.items.find((e: any) => e.object.name === 'legacy-web' && !e.dryRun);
    }, 20_000);
    expect(decision).toMatchObject({
      decision: 'Exempt',
      policy: 'require-team',
      rule: 'team',
      exception: `${ns}/legacy`,
      operation: 'CREATE',
      object: { kind: 'Deployment', namespace: ns, name: 'legacy-web' },
    });
    expect(decision.user).not.toBe('');
    expect(decision.fields).toEqual([]);
    // The dotted name's request used the exception too, though another rule refused it;
    // the dry runs above are recorded as such (dryRun: true), as every decision is.
    const all = await getJson('admissionevents', '-n', ns);
    expect(all.items.some((e: any) => e.decision === 'Exempt' && e.dryRun)).toBe(true);
    expect(
      all.items
        .filter((e: any) => e.decision === 'Exempt' && !e.dryRun)
        .map((e: any) => e.object.name)
        .sort(),
    ).toEqual(['legacy-web', 'legacy-web.v2']);
    /** The first PolicyExempted Event of the namespace `which` picks, once there. */
    const exemptedEvent = (which: (e: any) => boolean) =>
      eventually(async () => {
        const list = await getJson(
          'events.events.k8s.io',
          '-n',
          ns,
          '--field-selector',
          'reason=PolicyExempted',
        );
        return list.items.find(which);
      }, 20_000);
    const ev = await exemptedEvent((e) => e.regarding.name === 'legacy-web');
    expect(ev).toMatchObject({
      type: 'Normal',
      action: 'Exempted',
      reportingController: 'annex.dev/policy',
      regarding: { kind: 'Deployment', namespace: ns, name: 'legacy-web' },
      note: `AdmissionPolicy require-team rule team exempted CREATE of Deployment ${ns}/legacy-web by PolicyException ${ns}/legacy`,
    });
    // legacy-web.v2 was refused by dns-label: no object to regard, so its namespace is.
    const refused = await exemptedEvent((e) => e.related?.name === 'legacy-web.v2');
    expect(refused.regarding).toMatchObject({ kind: 'Namespace', name: ns });
  });

  it('an exception naming a missing rule or a policy that refuses exceptions says why, and exempts nothing', async () => {
    await applyObjects([
      policy('strict-team', {
        allowExceptions: false,
        match: { kinds: ['apps/Deployment'], namespaces: [other] },
      }),
      exception('typo', { exceptions: [{ policyName: 'require-team', ruleNames: ['teams'] }] }),
      exception(
        'strict',
        {
          exceptions: [{ policyName: 'strict-team' }],
          match: { any: [{ resources: { names: ['*'] } }] },
        },
        other,
      ),
    ]);
    const typo = await eventually(async () => {
      const o = await getJson('policyexception', 'typo', '-n', ns);
      return ready(o) ? o : undefined;
    }, 20_000);
    expect(ready(typo)).toMatchObject({
      status: 'False',
      reason: 'RuleNotFound',
      message: 'AdmissionPolicy "require-team" has no validate rule "teams"',
    });
    const strict = await eventually(async () => {
      const o = await getJson('policyexception', 'strict', '-n', other);
      return ready(o) ? o : undefined;
    }, 20_000);
    expect(ready(strict)).toMatchObject({ status: 'False', reason: 'ExceptionsNotAllowed' });
    // strict-team stays with the API server, and the exception does not lift it.
    await enforcedBy('strict-team', 'ValidatingAdmissionPolicy');
    const r = await eventually(async () => {
      const x = await create(other, 'anything', true);
      return x.stderr.includes("ValidatingAdmissionPolicy 'annex-strict-team'") ? x : undefined;
    }, 20_000);
    expect(r.code).toBe(1);
  });

  it('with its exceptions deleted, the policy returns to the API server', async () => {
    await kubectlOk(['delete', 'policyexception', 'legacy', 'typo', '-n', ns]);
    await enforcedBy('require-team', 'ValidatingAdmissionPolicy');
    const r = await eventually(async () => {
      const x = await create(ns, 'legacy-api', true);
      return x.stderr.includes("ValidatingAdmissionPolicy 'annex-require-team'") ? x : undefined;
    }, 30_000);
    expect(r.code).toBe(1);
  });
});
