// AdmissionPolicies against the real kube-apiserver, with two annex replicas sharing one
// CA on loopback: A answers the webhooks and (first) the aggregated API, B is its peer.
// Both authenticate the API server's webhook client certificate (admission.clientCA); a
// forged review is tested in admission-callers.test.ts.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { loadPolicies } from '../../src/policy/load.js';
import { createLogger } from '../../src/log.js';
import { compilePolicy } from '../../src/policy/compile.js';
import { MUTATE_KIND_FAULT, VALIDATE_KIND_FAULT } from '../../src/policy/schema.js';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  installPolicyCrd,
  featureRegistrations,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { freePort } from '../cluster/control-plane.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
  type ClusterInfo,
} from '../cluster/harness.js';
import { checkCases, deploymentIn, expectCheckEqualsLive } from '../cluster/check-live.js';
import { eventually } from '../cluster/kubelet.js';

const repo = join(import.meta.dirname, '..', '..');
const POLICIES = '/apis/policy.annex.dev/v1alpha1/admissionpolicies';

describeCluster('AdmissionPolicies, live', (c: ClusterInfo) => {
  let ns = '';
  let a: TestAnnex;
  let b: TestAnnex;
  let registered: any[] = [];
  const logA = new PassThrough();
  let logText = '';
  logA.on('data', (d: Buffer) => (logText += d.toString()));
  const policyDir = mkdtempSync(join(tmpdir(), 'annex-policies-'));

  /** The demo policies, limited to the test namespace so no other test meets them. */
  const demo = (file: string) => {
    const p = parse(readFileSync(join(repo, 'policies', file), 'utf8'));
    p.spec.match.namespaces = [ns];
    return p;
  };
  const deployment = (name: string, o: Parameters<typeof deploymentIn>[2] = {}) =>
    deploymentIn(ns, name, o);
  const dryRunCreate = (obj: any) =>
    apiRequest('POST', `/apis/apps/v1/namespaces/${ns}/deployments?dryRun=All`, { body: obj });

  beforeAll(async () => {
    ns = await createNamespace('policy');
    await installPolicyCrd();
    const [pa, pb] = [await freePort(), await freePort()];
    const common = (instance: string, peer: number) => ({
      admission: {
        names: { enabled: false },
        defaults: { enabled: false },
        clientCA: c.webhookClientCaFile,
      },
      metrics: { enabled: false },
      policy: {
        enabled: true,
        // Every decision through annex's webhook here (decision log, Events, replicas);
        // policies handed to the API server as CEL are tested in policy-native.test.ts.
        native: false,
        instance,
        decisionLog: { peers: [`https://127.0.0.1:${peer}`] },
      } as any,
    });
    a = await startTestAnnex({ ...common('annex-a', pb), server: { port: pa } } as any, [], {
      log: createLogger('info', logA),
    });
    b = await startTestAnnex({
      ...common('annex-b', pa),
      server: { port: pb },
      tls: { dir: a.certsDir },
    } as any);

    registered = featureRegistrations(a, 'policy', {
      webhooks: ['policies.annex.dev'],
      namespace: ns,
    });
    await ensureAnnexService();
    await applyObjects(registered);
    await waitForCondition(['apiservice/v1alpha1.audit.annex.dev'], 'Available');
  }, 120_000);

  afterAll(async () => {
    await kubectl(['delete', 'admissionpolicies', '--all', '--wait=false']);
    await deleteObjects(registered);
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
    await b?.stop();
    await a?.stop();
    rmSync(policyDir, { recursive: true, force: true });
  });

  it('a policy applied is enforced on the next create, within a second on a quiet machine', async () => {
    const bad = deployment('web.front');
    expect((await dryRunCreate(bad)).status).toBe(201);
    // The API server's first call to a webhook sets up its connection: made here, once.
    const w0 = performance.now();
    const warm = await apiRequest('POST', `${POLICIES}?dryRun=All`, {
      body: demo('workload-names.yaml'),
    });
    expect(warm.status).toBe(201);
    console.error(
      `annex: first call to the AdmissionPolicy webhook: ${(performance.now() - w0).toFixed(0)} ms`,
    );
    const t0 = performance.now();
    const created = await apiRequest('POST', POLICIES, { body: demo('workload-names.yaml') });
    expect(created.status).toBe(201);
    console.error(`annex: policy POST answered in ${(performance.now() - t0).toFixed(0)} ms`);
    let latency = 0;
    const roundTrips: number[] = [];
    for (;;) {
      const r0 = performance.now();
      const r = await dryRunCreate(bad);
      roundTrips.push(performance.now() - r0);
      if (r.status === 422) {
        latency = performance.now() - t0;
        expect(r.json().message).toBe(
          'admission webhook "policies.annex.dev" denied the request: Deployment.apps "web.front" is invalid: metadata.name: Invalid value: "web.front": must not contain dots',
        );
        break;
      }
      expect(performance.now() - t0).toBeLessThan(10_000);
    }
    const rt = roundTrips.sort((x, y) => x - y)[roundTrips.length >> 1]!;
    console.error(
      `annex: AdmissionPolicy apply-to-enforcement latency: ${latency.toFixed(0)} ms (API round trip ${rt.toFixed(0)} ms)`,
    );
    // A second on a quiet machine; a few round trips more (watch, registration, the API
    // server's reload of it) where the same run shows the API server slower.
    expect(latency).toBeLessThan(1000 + 10 * rt);

    // The policy reports itself ready.
    const r = await kubectl(['create', 'deployment', 'web.front', '-n', ns, '--image=nginx:1.27']);
    expect(r.code).toBe(1);
    // kubectl create deployment prints the Status message (the API server's own name
    // warning first); `kubectl create -f` prints the causes (see the annex check test).
    expect(r.stderr).toBe(
      'Warning: metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]\n' +
        'error: failed to create deployment: admission webhook "policies.annex.dev" denied the request: Deployment.apps "web.front" is invalid: metadata.name: Invalid value: "web.front": must not contain dots\n',
    );
    await eventually(async () => {
      const t = await kubectlOk(['get', 'admissionpolicy', 'workload-names']);
      return /^workload-names\s+Deny\s+Pod,\S+\s+True\s+True\s+webhook\s/m.test(t) ? t : undefined;
    }, 10_000);
    // Only matching requests reach annex: the rules are the policy's kinds and CREATE.
    const vwc = JSON.parse(
      await kubectlOk([
        'get',
        'validatingwebhookconfiguration',
        'annex-policies',
        '-o',
        'json',
        '--show-managed-fields',
      ]),
    );
    expect(vwc.webhooks[0].rules).toEqual([
      {
        apiGroups: [''],
        apiVersions: ['v1'],
        operations: ['CREATE'],
        resources: ['pods'],
        scope: '*',
      },
      {
        apiGroups: ['apps'],
        apiVersions: ['v1'],
        operations: ['CREATE'],
        resources: ['daemonsets', 'deployments', 'replicasets', 'statefulsets'],
        scope: '*',
      },
      {
        apiGroups: ['batch'],
        apiVersions: ['v1'],
        operations: ['CREATE'],
        resources: ['cronjobs', 'jobs'],
        scope: '*',
      },
    ]);
    expect(
      vwc.metadata.managedFields.some((m: any) => m.manager === 'annex' && m.operation === 'Apply'),
    ).toBe(true);
  });

  it('identical refusals make one Event with a count, regarding the namespace', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await kubectl([
        'create',
        'deployment',
        'web.front',
        '-n',
        ns,
        '--image=nginx:1.27',
      ]);
      expect(r.code).toBe(1);
    }
    const out = await eventually(async () => {
      const t = await kubectlOk(['events', '-n', ns, '--for', `namespace/${ns}`]);
      return /\(x[56] over/.test(t) ? t : undefined;
    }, 10_000);
    const lines = out.trim().split('\n').slice(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `Warning\\s+PolicyViolation\\s+Namespace/${ns}\\s+AdmissionPolicy workload-names rule dns-label denied CREATE of Deployment ${ns}/web.front; fields: metadata.name`,
      ),
    );
    const ev = JSON.parse(
      await kubectlOk([
        'get',
        'events.events.k8s.io',
        '-n',
        ns,
        '-o',
        'json',
        '--field-selector',
        'reason=PolicyViolation',
      ]),
    ).items.find((e: any) => e.regarding.kind === 'Namespace');
    expect(ev).toMatchObject({
      action: 'Denied',
      type: 'Warning',
      reportingController: 'annex.dev/policy',
      reportingInstance: 'annex-a',
      related: { kind: 'Deployment', name: 'web.front', namespace: ns },
    });
    expect(ev.series.count).toBeGreaterThanOrEqual(5);
  });

  it('a deleted policy no longer refuses', async () => {
    await kubectlOk(['delete', 'admissionpolicy', 'workload-names']);
    await eventually(
      async () => ((await dryRunCreate(deployment('web.front'))).status === 201 ? true : undefined),
      10_000,
    );
  });

  it('Warn prints kubectl warnings; Audit is recorded in admissionevents and kubectl events', async () => {
    await applyObjects([demo('app-name-label.yaml'), demo('host-network.yaml')]);
    const r = await eventually(async () => {
      const x = await kubectl(['create', '-f', '-'], {
        input: JSON.stringify(deployment('net', { hostNetwork: true })),
      });
      return x.stderr.includes('Warning') ? x : undefined;
    }, 10_000);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(
      'Warning: app-name-label: metadata.labels[app.kubernetes.io/name]: Required value\n',
    );
    const decided = (...more: string[]) =>
      kubectlOk([
        'get',
        'admissionevents',
        '-n',
        ns,
        '--field-selector',
        'policy=host-network',
        ...more,
      ]);
    const table = await eventually(async () => {
      const t = await decided();
      return t.includes('net') ? t : undefined;
    }, 10_000);
    const [head, row] = table.trim().split('\n');
    expect(head).toMatch(/^NAME\s+TIME\s+DECISION\s+POLICY\s+RULE\s+KIND\s+OBJECT\s+USER$/);
    expect(row).toMatch(/Audit\s+host-network\s+no-host-network\s+Deployment\s+net\s+annex-admin$/);
    // A server-side dry run is decided (and recorded) like any request; -o wide tells them apart.
    await kubectlOk(['create', '--dry-run=server', '-f', '-'], {
      input: JSON.stringify(deployment('net-dry', { hostNetwork: true })),
    });
    const wide = await eventually(async () => {
      const t = await decided('-o', 'wide');
      return t.includes('net-dry') ? t : undefined;
    }, 10_000);
    const [wideHead, ...wideRows] = wide.trim().split('\n');
    // EXCEPTION, last, is empty but for Exempt decisions (policy-exceptions.test.ts).
    expect(wideHead).toMatch(/\sUSER\s+DRY RUN\s+EXCEPTION$/);
    expect(wideRows.find((r) => /\snet\s/.test(r))).toMatch(/\sfalse\s*$/);
    expect(wideRows.find((r) => /\snet-dry\s/.test(r))).toMatch(/\strue\s*$/);
    const events = await eventually(async () => {
      const t = await kubectlOk(['events', '-n', ns, '--for', 'deployment/net']);
      return t.includes('host-network') ? t : undefined;
    }, 10_000);
    expect(events).toMatch(
      /Normal\s+PolicyViolation\s+Deployment\/net\s+AdmissionPolicy host-network rule no-host-network audited CREATE of Deployment/,
    );
    const decisions = JSON.parse(
      await kubectlOk([
        'get',
        'admissionevents',
        '-n',
        ns,
        '--field-selector',
        'decision=Warn',
        '-o',
        'json',
      ]),
    ).items;
    expect(decisions.map((d: any) => d.object.name)).toContain('net');
    // Never the object's contents.
    expect(JSON.stringify(decisions)).not.toContain('nginx');
  });

  it('kubectl get admissionevents -w streams decisions as they happen', async () => {
    const watch = spawn(
      c.kubectl,
      [
        '--kubeconfig',
        c.adminKubeconfig,
        'get',
        'admissionevents',
        '-n',
        ns,
        '-w',
        '--output-watch-events',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let seen = '';
    watch.stdout.on('data', (d) => (seen += d));
    try {
      // The initial list first (the earlier audit), then a new decision while watching.
      await eventually(async () => (seen.includes('ADDED') ? true : undefined), 10_000);
      await kubectlOk(['create', '-f', '-'], {
        input: JSON.stringify(deployment('net2', { hostNetwork: true })),
      });
      await eventually(
        async () =>
          /ADDED\s+\S+\s+\S+\s+Audit\s+host-network\s+no-host-network\s+Deployment\s+net2/.test(
            seen,
          )
            ? true
            : undefined,
        10_000,
      );
    } finally {
      watch.kill();
    }
  });

  it('a policy that does not compile is refused at apply with the rule and the fault', async () => {
    const bad = demo('pinned-images.yaml');
    bad.metadata.name = 'broken';
    bad.spec.validate[0].path = '$.spec..containers[';
    const r = await kubectl(['apply', '-f', '-'], { input: stringify(bad) });
    expect(r.code).toBe(1);
    let message = '';
    try {
      (await import('../../src/policy/compile.js')).compilePolicy(bad);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/^AdmissionPolicy "broken": rule "containers": /);
    expect(r.stderr).toContain(
      `admission webhook "admissionpolicies.annex.dev" denied the request: ${message}`,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it("a rule setting two checks, or a mutate rule none, is refused at apply in annex check's words", async () => {
    const both = demo('app-name-label.yaml');
    both.metadata.name = 'two-checks';
    both.spec.validate[0].schema = { type: 'string' }; // and required: true
    both.spec.mutate = [{ name: 'nothing', path: '$.spec' }];
    const faults = [VALIDATE_KIND_FAULT, MUTATE_KIND_FAULT].map((f) => {
      try {
        compilePolicy({
          ...both,
          spec: {
            ...both.spec,
            ...(f === VALIDATE_KIND_FAULT ? { mutate: [] } : { validate: [] }),
          },
        });
      } catch (e) {
        return (e as Error).message;
      }
      return 'compiled';
    });
    expect(faults).toEqual([
      `AdmissionPolicy "two-checks": rule "app-name": ${VALIDATE_KIND_FAULT}`,
      `AdmissionPolicy "two-checks": rule "nothing": ${MUTATE_KIND_FAULT}`,
    ]);
    // The CRD's own validation, before any webhook: the same words after the field path.
    const r = await kubectl(['apply', '-f', '-'], { input: stringify(both) });
    expect(r.code).toBe(1);
    const [head, ...causes] = r.stderr.trim().split('\n');
    expect(head).toBe('The AdmissionPolicy "two-checks" is invalid: ');
    // The API server lists the causes in no fixed order.
    expect(causes.sort()).toEqual([
      `* spec.mutate[0]: Invalid value: rule "nothing": ${MUTATE_KIND_FAULT}`,
      `* spec.validate[0]: Invalid value: rule "app-name": ${VALIDATE_KIND_FAULT}`,
    ]);
  });

  it("two replicas: either one lists both replicas' decisions through the API server", async () => {
    // The webhooks now call B: one more Warn decision, made by B.
    const patch = (kind: string, port: number) =>
      kubectlOk([
        'patch',
        kind,
        'annex-policies',
        '--type=json',
        '-p',
        JSON.stringify([
          { op: 'replace', path: '/webhooks/0/clientConfig/service/port', value: port },
        ]),
      ]);
    await patch('validatingwebhookconfiguration', b.port);
    await patch('mutatingwebhookconfiguration', b.port);
    await eventually(async () => {
      const x = await kubectl([
        'create',
        'deployment',
        `on-b-${Date.now()}`,
        '-n',
        ns,
        '--image=nginx:1.27',
        '--dry-run=server',
      ]);
      const t = await kubectlOk(['get', 'admissionevents', '-n', ns, '-o', 'json']);
      return x.code === 0 && JSON.parse(t).items.some((d: any) => d.replica === 'annex-b')
        ? true
        : undefined;
    }, 15_000);
    const replicasSeen = async () =>
      new Set(
        JSON.parse(await kubectlOk(['get', 'admissionevents', '-n', ns, '-o', 'json'])).items.map(
          (d: any) => d.replica,
        ),
      );
    expect(await replicasSeen()).toEqual(new Set(['annex-a', 'annex-b']));
    // The aggregated API now answered by B: the same decisions.
    const before = JSON.parse(
      await kubectlOk(['get', 'admissionevents', '-n', ns, '-o', 'json']),
    ).items.map((d: any) => d.metadata.name);
    await kubectlOk([
      'patch',
      'apiservice',
      'v1alpha1.audit.annex.dev',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { service: { port: b.port } } }),
    ]);
    await eventually(async () => {
      const items = JSON.parse(
        await kubectlOk(['get', 'admissionevents', '-n', ns, '-o', 'json']),
      ).items;
      const names = items.map((d: any) => d.metadata.name);
      return before.every((n: string) => names.includes(n)) && names.length === before.length
        ? true
        : undefined;
    }, 15_000);
    expect(await replicasSeen()).toEqual(new Set(['annex-a', 'annex-b']));
    // Paging works over the merged list.
    const page = JSON.parse(
      await kubectlOk([
        'get',
        '--raw',
        `/apis/audit.annex.dev/v1alpha1/namespaces/${ns}/admissionevents?limit=1`,
      ]),
    );
    expect(page.items).toHaveLength(1);
    expect(page.metadata.continue).toBeTruthy();
  });

  it('annex check and the live cluster give the same verdicts and messages', async () => {
    for (const f of readdirSync(join(repo, 'policies'))) {
      writeFileSync(join(policyDir, f), stringify(demo(f)));
    }
    await applyObjects(
      readdirSync(policyDir).map((f) => parse(readFileSync(join(policyDir, f), 'utf8'))),
    );
    // This annex runs with policy.native off: every policy answers as its webhook
    // (policy-native.test.ts holds the same comparison with the default, native).
    const withNameWarning = await expectCheckEqualsLive(checkCases(ns), loadPolicies([policyDir]), {
      namespace: ns,
      native: false,
    });
    expect(withNameWarning).toEqual(['name.yaml', 'both.yaml']);
  });

  it('300 failing rules on a 900 KB value: a bounded denial, passed on by the API server', async () => {
    // Before the bounds, annex built a 277 MB answer (or, with distinct messages, one past
    // V8's longest string, and the review failed).
    const bounded = [0, 1, 2, 3, 4].map((p) => ({
      apiVersion: 'policy.annex.dev/v1alpha1',
      kind: 'AdmissionPolicy',
      metadata: { name: `bounded-${p}` },
      spec: {
        match: { kinds: ['ConfigMap'], namespaces: [ns] },
        actions: ['Deny', 'Warn'],
        validate: Array.from({ length: 60 }, (_, r) => ({
          name: `r${r}`,
          path: '$.data.v',
          schema: { type: 'integer' },
          message: `must be a number (rule ${p}.${r})`,
        })),
      },
    }));
    await applyObjects(bounded);
    try {
      const cm = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'big', namespace: ns },
        data: { v: 'x'.repeat(900 * 1024) },
      };
      const path = `/api/v1/namespaces/${ns}/configmaps?dryRun=All`;
      const r = await eventually(async () => {
        const x = await apiRequest('POST', path, { body: cm });
        return x.status === 422 && x.json().details?.causes?.length === 101 ? x : undefined;
      }, 30_000);
      expect(Buffer.byteLength(r.body)).toBeLessThan(64 * 1024);
      const causes = r.json().details.causes;
      expect(causes[0].message).toBe(
        'Invalid value: <value omitted: 921600 bytes>: must be a number (rule 0.0)',
      );
      expect(causes.at(-1).message).toBe('and 200 more causes not shown');
      const warnings = [r.headers.warning ?? []].flat().join('\n');
      expect(warnings).toContain('<value omitted: 921600 bytes>');
      expect(warnings.length).toBeLessThan(8 * 1024);
    } finally {
      await deleteObjects(bounded);
    }
  });

  it('the policy watch survives a forced 410 and a kube-apiserver restart', async () => {
    const listed = () =>
      logText.split('\n').filter((l) => l.includes('listed AdmissionPolicies')).length;
    await kubectl(['delete', 'admissionpolicies', '--all']);
    await eventually(
      async () =>
        (await dryRunCreate(deployment('after.restart'))).status === 201 ? true : undefined,
      10_000,
    );
    const before = listed();
    // Writes elsewhere move etcd's revision past the last one annex's watch saw: after the
    // restart its resourceVersion is older than the new watch cache, so the API server
    // answers 410 Gone and annex must list again.
    for (let i = 0; i < 3; i++) await kubectlOk(['create', 'configmap', `bump-${i}`, '-n', ns]);
    writeFileSync(c.apiServerRestartFile, '');
    process.kill(Number(readFileSync(c.apiServerPidFile, 'utf8')), 'SIGKILL');
    await eventually(
      async () => ((await apiRequest('GET', '/readyz')).status === 200 ? true : undefined),
      60_000,
    );
    await eventually(async () => (listed() > before ? true : undefined), 40_000);
    expect(logText).toMatch(/AdmissionPolicy watch failed|listed AdmissionPolicies/);
    // The watch is live again: a policy applied now is enforced.
    await apiRequest('POST', POLICIES, { body: demo('workload-names.yaml') });
    await eventually(
      async () =>
        (await dryRunCreate(deployment('after.restart'))).status === 422 ? true : undefined,
      10_000,
    );
  });
});
