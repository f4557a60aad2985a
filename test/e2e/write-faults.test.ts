// The writes annex makes, fault-tested (issue 29 item 4): its registrations (registration.apply),
// AdmissionPolicy status, Events, the shared CA's Secret and Lease and a native policy's CEL
// objects, each failing in the API server (down, 403, 409, 422) and then allowed again; the test measures how long annex takes to make the write hold. A control
// plane of its own (its kube-apiserver is killed), and annex as an ordinary user whose RBAC
// the test changes. Figures go to stderr as `write-faults: …` lines.
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ControlPlane, freePort, type ClusterInfo } from '../../src/devcluster/control-plane.js';
import * as wire from '../../src/devcluster/wire.js';
import { allow } from '../../src/admission/verdict.js';
import { validatingWebhook } from '../../src/admission/webhook.js';
import { createLogger } from '../../src/log.js';
import type { Feature } from '../../src/core/feature.js';
import { startTestAnnex, type TestAnnex } from '../cluster/annex.js';
import { until } from '../cluster/direct.js';
import { describeCluster, kubectl } from '../cluster/harness.js';

const NS = 'write-faults';
const EVENTS_NS = 'write-faults-events';
const USER = 'jane'; // user.kubeconfig's user: annex runs as it
const WRITES = 'write-faults-writes';
const CA_WRITES = 'write-faults-ca';
const CEL_WRITES = 'write-faults-cel';
const CA_SECRET = 'annex-tls';
const CA_SYNC_S = 2;
/** Seconds: backoff caps at 30 s, so a generous bound a loaded machine cannot miss. */
const BOUND_MS = 60_000;

const report = (line: string) => console.error(`write-faults: ${line}`);

describeCluster('write faults (own control plane)', (shared) => {
  const cp = new ControlPlane(shared.binDir, shared.version);
  let c: ClusterInfo;
  let annex: TestAnnex;
  let logText = '';

  const k = async (args: string[], input?: string) => {
    const r = await kubectl(args, {
      as: { kubeconfig: c.adminKubeconfig },
      ...(input !== undefined ? { input } : {}),
    });
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const run: wire.Kubectl = (a, i) => k(a, i);
  const getJson = async (args: string[]) => JSON.parse(await k(['get', ...args, '-o', 'json']));
  const linesWith = (s: string) => logText.split('\n').filter((l) => l.includes(s));

  /** Polls `f` every 250 ms (kubectl calls are not free here); the milliseconds it took. */
  const poll = (what: string, f: () => Promise<boolean>) => until(what, f, BOUND_MS, 250);

  const policy = (name: string, kind: string, namespace: string, actions = ['Warn']) => ({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec: {
      match: { kinds: [kind], namespaces: [namespace] },
      actions,
      validate: [{ name: 'label', path: '$.metadata.labels.app', required: true }],
    },
  });
  const applyPolicy = (p: object) => k(['apply', '-f', '-'], JSON.stringify(p));
  const enforced = async (name: string) => {
    const p = await getJson(['admissionpolicy', name]);
    const cond = (p.status?.conditions ?? []).find((x: { type: string }) => x.type === 'Enforced');
    return cond?.status === 'True' && cond.observedGeneration === p.metadata.generation;
  };
  /** annex-policies' validating rules name `resource` (as the API server holds them). */
  const rulesCover = async (resource: string) => {
    const cfg = await getJson(['validatingwebhookconfiguration', 'annex-policies']);
    const w = (cfg.webhooks ?? []).find((x: { name: string }) => x.name === 'policies.annex.dev');
    return (w?.rules ?? []).some((r: { resources: string[] }) => r.resources.includes(resource));
  };
  /** Times each recovery signal from `t0`, all at once. */
  async function recoveries(t0: number, signals: Record<string, () => Promise<boolean>>) {
    const out: Record<string, number> = {};
    await Promise.all(
      Object.entries(signals).map(async ([name, f]) => {
        await poll(name, f);
        out[name] = Date.now() - t0;
      }),
    );
    return out;
  }
  const show = (t: Record<string, number>) =>
    Object.entries(t)
      .map(([n, ms]) => `${n} ${ms} ms`)
      .join(', ');

  /** A ValidatingAdmissionPolicy that refuses the writes `rule` matches, with `reason`. */
  const refusal = (name: string, rule: object, reason: 'Forbidden' | 'Invalid', ns?: string) => [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [rule] },
        validations: [{ expression: 'false', message: `${name}: refused by the test`, reason }],
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: {
        policyName: name,
        validationActions: ['Deny'],
        ...(ns
          ? {
              matchResources: {
                namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
              },
            }
          : {}),
      },
    },
  ];

  // annex's rights: read and create anything; patch what the tests never take away; and,
  // bound apart so a test can take them away, patch its registrations and policy status.
  const binding = (name: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: USER }],
  });
  const writesBinding = binding(WRITES);
  const caBinding = binding(CA_WRITES);
  const celBinding = binding(CEL_WRITES);
  const rbac = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'write-faults-base' },
      rules: [
        {
          apiGroups: ['*'],
          resources: ['*'],
          verbs: ['get', 'list', 'watch', 'create', 'delete'],
        },
        {
          apiGroups: ['', 'events.k8s.io'],
          resources: ['events'],
          verbs: ['patch', 'update'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'write-faults-base' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'write-faults-base',
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: USER }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: WRITES },
      rules: [
        {
          apiGroups: ['admissionregistration.k8s.io'],
          resources: ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'],
          verbs: ['patch'],
        },
        {
          apiGroups: ['policy.annex.dev'],
          resources: ['admissionpolicies/status'],
          verbs: ['patch'],
        },
      ],
    },
    writesBinding,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: CA_WRITES },
      rules: [
        {
          apiGroups: ['', 'coordination.k8s.io'],
          resources: ['secrets', 'leases'],
          verbs: ['update'],
        },
      ],
    },
    caBinding,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: CEL_WRITES },
      rules: [
        {
          apiGroups: ['admissionregistration.k8s.io'],
          resources: [
            'validatingadmissionpolicies',
            'validatingadmissionpolicybindings',
            'mutatingadmissionpolicies',
            'mutatingadmissionpolicybindings',
          ],
          verbs: ['patch'],
        },
      ],
    },
    celBinding,
  ];

  // A 409 as the API server makes one: while annex's PUT of the CA Secret (with the
  // resourceVersion it read) is in admission, another writer updates the Secret; the PUT's
  // storage update then finds a newer object and answers 409 Conflict. Armed once.
  let conflictArmed = false;
  let conflicts = 0;
  const conflictFeature: Feature = {
    name: 'conflict',
    webhooks: [
      validatingWebhook({
        name: 'conflict.write-faults.annex.dev',
        rules: [
          {
            apiGroups: [''],
            apiVersions: ['v1'],
            operations: ['UPDATE'],
            resources: ['secrets'],
            scope: 'Namespaced',
          },
        ],
        // Only annex's namespace, which annex's webhooks leave out by default (it is safe
        // here: failurePolicy Ignore, and only this test's Secret is acted on).
        namespaceSelector: {
          matchLabels: { 'kubernetes.io/metadata.name': wire.ANNEX_NAMESPACE },
        },
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admit: async (req) => {
          if (conflictArmed && req.name === CA_SECRET && req.userInfo?.username === USER) {
            conflictArmed = false;
            await k([
              'annotate',
              'secret',
              CA_SECRET,
              '-n',
              wire.ANNEX_NAMESPACE,
              `write-faults/bump=${++conflicts}`,
              '--overwrite',
            ]);
          }
          return allow();
        },
      }),
    ],
  };

  const logs = new PassThrough();
  logs.on('data', (d: Buffer) => (logText += d.toString()));
  /** annex as `jane`; `native`: the policies CEL can express go to the API server (policy.native). */
  const startAnnex = async (native: boolean) =>
    startTestAnnex(
      {
        server: { port: await freePort() },
        // One CA in a Secret, kept by the Lease holder; a rotation stays in `publishing`.
        tls: { secret: CA_SECRET, syncIntervalSeconds: CA_SYNC_S, overlapSeconds: 3600 } as never,
        kube: { kubeconfig: c.userKubeconfig },
        admission: {
          names: { enabled: false },
          defaults: { enabled: false },
          clientCA: c.webhookClientCaFile,
        } as never,
        metrics: { enabled: false } as never,
        policy: { enabled: true, events: true, native } as never,
        registration: { apply: true } as never,
      },
      native ? [] : [conflictFeature],
      { log: createLogger('info', logs) },
    );

  beforeAll(async () => {
    const t0 = Date.now();
    c = await cp.start(() => {});
    await k(['create', 'namespace', NS]);
    await k(['create', 'namespace', EVENTS_NS]);
    await wire.applyObjects(run, rbac);
    await wire.applyObjects(run, [
      ...wire.repoManifest('manifests/crds/admissionpolicies.yaml'),
      ...wire.repoManifest('manifests/crds/policyexceptions.yaml'),
    ]);
    await wire.ensureAnnexService(run);
    annex = await startAnnex(false);
    await poll('annex-policies registered', async () => {
      await getJson(['validatingwebhookconfiguration', 'annex-policies']);
      return true;
    });
    report(`setup ${Date.now() - t0} ms`);
  });

  afterAll(async () => {
    await cp.resume('kube-apiserver').catch(() => {});
    await annex?.stop();
    await cp.stop();
  });

  it('kube-apiserver killed right after a policy is created: status and rules hold once it is back', async () => {
    await applyPolicy(policy('down', 'ConfigMap', NS));
    const atKill = logText.length;
    await cp.pause('kube-apiserver');
    const downAt = Date.now();
    await new Promise((r) => setTimeout(r, 3000));
    await cp.resume('kube-apiserver'); // resolves once /readyz is ok
    const upAt = Date.now();
    const times = await recoveries(upAt, {
      'Enforced=True': () => enforced('down'),
      'annex-policies covers configmaps': () => rulesCover('configmaps'),
    });
    // Which of annex's writes the outage caught (a race with the kill: reported, not asserted).
    const failed = logText
      .slice(atKill)
      .split('\n')
      .filter((l) => /(status not written|registration failed); retrying/.test(l))
      .map((l) => (l.includes('status not written') ? 'status' : 'registration'));
    report(
      `kube-apiserver down ${upAt - downAt} ms; writes refused meanwhile: ${failed.join(', ') || 'none'}; after /readyz ok: ${show(times)}`,
    );
    expect(Math.max(...Object.values(times))).toBeLessThan(BOUND_MS);
  });

  it('403 on the registration and on the status write: both hold once the permission is back', async () => {
    await k(['delete', 'clusterrolebinding', WRITES]);
    await applyPolicy(policy('rbac', 'Service', NS));
    await poll(
      'both writes refused with 403',
      async () =>
        linesWith('status not written; retrying').some(
          (l) => l.includes('"policy":"rbac"') && l.includes(': 403 Forbidden'),
        ) && linesWith('registration failed; retrying').some((l) => l.includes(': 403 Forbidden')),
    );
    expect(await enforced('rbac')).toBe(false);
    expect(await rulesCover('services')).toBe(false);
    // Long enough for the backoff to grow past its first steps.
    await new Promise((r) => setTimeout(r, 5000));
    await wire.applyObjects(run, [writesBinding]);
    const t0 = Date.now();
    const times = await recoveries(t0, {
      'Enforced=True': () => enforced('rbac'),
      'annex-policies covers services': () => rulesCover('services'),
    });
    report(`403 (RBAC) lifted; after the binding was back: ${show(times)}`);
    expect(Math.max(...Object.values(times))).toBeLessThan(BOUND_MS);
  });

  it('422 on the status write: it holds once the API server takes it', async () => {
    const vap = refusal(
      'write-faults-status',
      {
        apiGroups: ['policy.annex.dev'],
        apiVersions: ['*'],
        operations: ['UPDATE'],
        resources: ['admissionpolicies/status'],
      },
      'Invalid',
    );
    await wire.applyObjects(run, vap);
    // A new ValidatingAdmissionPolicy is enforced after the API server's informer sees it.
    await new Promise((r) => setTimeout(r, 3000));
    await applyPolicy(policy('invalid', 'Secret', NS));
    await poll('status refused with 422', async () =>
      linesWith('status not written; retrying').some(
        (l) =>
          l.includes('"policy":"invalid"') &&
          l.includes(': 422 Invalid') &&
          l.includes('write-faults-status: refused'),
      ),
    );
    expect(await enforced('invalid')).toBe(false);
    await new Promise((r) => setTimeout(r, 5000));
    await k(['delete', 'validatingadmissionpolicybinding', 'write-faults-status']);
    const t0 = Date.now();
    const times = await recoveries(t0, { 'Enforced=True': () => enforced('invalid') });
    report(`422 (ValidatingAdmissionPolicy) lifted; after its binding was deleted: ${show(times)}`);
    expect(Math.max(...Object.values(times))).toBeLessThan(BOUND_MS);
  });

  it('403 on an Event write: the Event is written once the API server takes it', async () => {
    const vap = refusal(
      'write-faults-events',
      {
        apiGroups: ['', 'events.k8s.io'],
        apiVersions: ['*'],
        operations: ['CREATE'],
        resources: ['events'],
      },
      'Forbidden',
      EVENTS_NS,
    );
    await wire.applyObjects(run, vap);
    await applyPolicy(policy('deny-events', 'ConfigMap', EVENTS_NS, ['Deny']));
    await poll('policy enforced', () => enforced('deny-events'));
    await new Promise((r) => setTimeout(r, 3000));
    // A real (not dry-run) request the policy denies: annex records a PolicyViolation Event.
    await poll('request denied by the policy', async () => {
      const r = await kubectl(['create', 'configmap', 'unlabelled', '-n', EVENTS_NS], {
        as: { kubeconfig: c.adminKubeconfig },
      });
      return r.code !== 0 && r.stderr.includes('policies.annex.dev');
    });
    await poll('Event write refused', async () =>
      linesWith('event not written').some(
        (l) => l.includes(': 403 Forbidden') && l.includes('write-faults-events: refused'),
      ),
    );
    const events = async () =>
      (await getJson(['events.v1.events.k8s.io', '-n', EVENTS_NS])).items.filter(
        (e: { reason: string }) => e.reason === 'PolicyViolation',
      ).length;
    expect(await events()).toBe(0);
    await k(['delete', 'validatingadmissionpolicybinding', 'write-faults-events']);
    const t0 = Date.now();
    const times = await recoveries(t0, {
      'PolicyViolation Event': async () => (await events()) > 0,
    });
    report(`403 on Events lifted; after the binding was deleted: ${show(times)}`);
    expect(linesWith('event not written').some((l) => l.includes('retrying'))).toBe(true);
  });

  it('403 on the shared CA Secret and its Lease during a rotation: it goes on once allowed', async () => {
    const phase = async () =>
      (await getJson(['secret', CA_SECRET, '-n', wire.ANNEX_NAMESPACE])).metadata.annotations?.[
        'annex.dev/ca-phase'
      ];
    expect(await phase()).toBe('stable');
    await k(['delete', 'clusterrolebinding', CA_WRITES]);
    await k(['annotate', 'secret', CA_SECRET, '-n', wire.ANNEX_NAMESPACE, 'annex.dev/rotate=now']);
    await poll('rotation refused with 403', async () =>
      linesWith('shared certificates sync failed').some((l) => l.includes(': 403 Forbidden')),
    );
    await new Promise((r) => setTimeout(r, 2 * CA_SYNC_S * 1000));
    expect(await phase()).toBe('stable');
    await wire.applyObjects(run, [caBinding]);
    const t0 = Date.now();
    const times = await recoveries(t0, {
      'phase publishing': async () => (await phase()) === 'publishing',
    });
    report(
      `403 on the CA Secret/Lease lifted; after the binding was back (polled every ${CA_SYNC_S} s): ${show(times)}`,
    );
    expect(times['phase publishing']).toBeLessThan(BOUND_MS);
  });

  it('409 on the shared CA Secret (another writer between its read and its PUT): the step holds after a retry', async () => {
    const phase = async () =>
      (await getJson(['secret', CA_SECRET, '-n', wire.ANNEX_NAMESPACE])).metadata.annotations?.[
        'annex.dev/ca-phase'
      ];
    const from = logText.length;
    conflictArmed = true;
    // Back to `stable` with a rotation asked for: the Lease holder's next step is a PUT.
    await k([
      'annotate',
      'secret',
      CA_SECRET,
      '-n',
      wire.ANNEX_NAMESPACE,
      'annex.dev/ca-phase=stable',
      'annex.dev/rotate=now',
      '--overwrite',
    ]);
    let t0 = 0;
    await poll('the PUT refused with 409', async () => {
      const hit = logText
        .slice(from)
        .split('\n')
        .some((l) => l.includes('shared certificates sync failed') && l.includes(': 409 Conflict'));
      if (hit) t0 = Date.now();
      return hit;
    });
    expect(conflicts).toBe(1);
    const times = await recoveries(t0, {
      'phase publishing': async () => (await phase()) === 'publishing',
    });
    report(`409 on the CA Secret; after the conflict was logged: ${show(times)}`);
    console.log(`recovery: CA Secret (409) ${times['phase publishing']} ms`);
    expect(times['phase publishing']).toBeLessThan(BOUND_MS);
  });

  // A VAP cannot stage a 422 here: the API server exempts ValidatingAdmissionPolicies and
  // their bindings from admission (IsExemptAdmissionConfigurationResource), and annex's
  // server-side apply with force=true sends no resourceVersion and takes fields from any other
  // manager, so no 409 either. What can fail is the permission (403) and the API server.
  it('403 on the CEL objects of a native policy: they hold once the permission is back', async () => {
    await annex.stop();
    await k(['delete', 'clusterrolebinding', CEL_WRITES]);
    const from = logText.length;
    annex = await startAnnex(true);
    const name = 'cel';
    // Through annex's validating webhook on AdmissionPolicies, which the API server reaches at
    // the new annex once its registrar re-applied the configuration (a new port): until
    // then the apply is refused (connection refused), which is not what this test measures.
    await poll('the policy applied through the restarted annex', () =>
      applyPolicy({
        apiVersion: 'policy.annex.dev/v1alpha1',
        kind: 'AdmissionPolicy',
        metadata: { name },
        spec: {
          match: { kinds: ['ConfigMap'], namespaces: [NS] },
          actions: ['Deny'],
          validate: [{ name: 'dns-label', path: '$.metadata.name', nameRule: 'dns1123Label' }],
        },
      }).then(
        () => true,
        () => false,
      ),
    );
    const celRefused = () =>
      logText
        .slice(from)
        .split('\n')
        .filter(
          (l) =>
            l.includes('cannot apply the policies compiled to CEL; retrying') &&
            l.includes(': 403 Forbidden'),
        );
    await poll('CEL objects refused with 403', async () => celRefused().length > 0);
    const vapHeld = async () => {
      const r = await kubectl(['get', 'validatingadmissionpolicy', `annex-${name}`], {
        as: { kubeconfig: c.adminKubeconfig },
      });
      return r.code === 0;
    };
    expect(await vapHeld()).toBe(false);
    expect(await enforced(name)).toBe(false);
    // Long enough for the backoff to grow past its first steps.
    await new Promise((r) => setTimeout(r, 5000));
    const attempts = celRefused().length;
    await wire.applyObjects(run, [celBinding]);
    const t0 = Date.now();
    const times = await recoveries(t0, {
      [`ValidatingAdmissionPolicy annex-${name}`]: vapHeld,
      'Enforced=True': () => enforced(name),
    });
    report(
      `recovery: 403 on the CEL objects lifted after ${attempts} refused attempts; after the binding was back: ${show(times)}`,
    );
    console.log(`recovery: CEL objects (403) ${Math.max(...Object.values(times))} ms`);
    expect(Math.max(...Object.values(times))).toBeLessThan(BOUND_MS);
  });
});
