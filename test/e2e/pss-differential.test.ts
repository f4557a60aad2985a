// Differential test of the Pod Security Standards engine (src/policy/pss): every generated
// Pod (test/fixtures/pss-corpus.ts) is dry-run-created over HTTP in namespaces labelled
// `pod-security.kubernetes.io/enforce=<level>` and `enforce-version=<version>`, and the API
// server's PodSecurity verdict and message are compared with annex's evaluation of the same
// Pod as the API server defaulted it (read back from a dry-run in an unlabelled namespace,
// which also sorts out the Pods validation refuses before PodSecurity runs).
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  checksFor,
  evaluatePodSecurity,
  podSecurityMessage,
  policyMinor,
  type Level,
} from '../../src/policy/pss/index.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
} from '../cluster/harness.js';
import { pssEphemeralContainers, pssPods } from '../fixtures/pss-corpus.js';
import { pool } from '../cluster/pool.js';

const PODS = Number(process.env.ANNEX_PSS_PODS ?? 2000);
const EPHEMERAL = Number(process.env.ANNEX_PSS_EPHEMERAL ?? 300);
// latest; v1.34 (before the user-namespace relaxations and the v1.37 sysctls); v1.30 (before
// container_engine_t, the v1.32 sysctls and host probes); v1.24 (before the Windows
// exemptions); v1.18 (seccomp by annotation, no capabilities or runAsUser restricted checks).
const VERSIONS = ['latest', 'v1.34', 'v1.30', 'v1.24', 'v1.18'];
const LEVELS: Level[] = ['baseline', 'restricted'];
const report = (line: string) => console.error(`pss-differential: ${line}`);

describeCluster('Pod Security Standards: annex in-process against PodSecurity admission', () => {
  let open = '';
  const policyNs = new Map<string, string>();
  const key = (level: Level, version: string) => `${level}:${version}`;

  beforeAll(async () => {
    open = await createNamespace('pssopen');
    for (const level of LEVELS)
      for (const version of VERSIONS) {
        const ns = await createNamespace(`pss-${level.slice(0, 4)}-${version.replace('.', '')}`);
        await kubectlOk([
          'label',
          'namespace',
          ns,
          `pod-security.kubernetes.io/enforce=${level}`,
          `pod-security.kubernetes.io/enforce-version=${version}`,
        ]);
        policyNs.set(key(level, version), ns);
      }
  }, 180_000);

  afterAll(async () => {
    for (const ns of policyNs.values()) await kubectl(['delete', 'pods', '--all', '-n', ns]);
    for (const ns of [open, ...policyNs.values()])
      if (ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  const create = (ns: string, pod: any) =>
    apiRequest('POST', `/api/v1/namespaces/${ns}/pods?dryRun=All`, {
      body: { ...pod, metadata: { ...pod.metadata, namespace: ns } },
    });

  it('has PodSecurity admission enabled in the API server', async () => {
    const r = await create(policyNs.get(key('baseline', 'latest'))!, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'sentinel' },
      spec: {
        containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: true } }],
      },
    });
    expect(r.status).toBe(403);
    expect(r.json().message).toContain('violates PodSecurity "baseline:latest": privileged');
  });

  it('agrees with the API server on every (Pod, level, version)', async () => {
    const generated = pssPods(PODS);
    // The Pod as the API server defaults it (hostNetwork copies containerPort to hostPort…).
    const served = await pool(generated, async (pod) => {
      const r = await create(open, pod);
      if (r.status === 201) return r.json();
      if (r.status !== 422) throw new Error(`${pod.metadata.name}: ${r.status} ${r.body}`);
      return { refused: String(r.json().message) };
    });
    const valid = generated
      .map((pod, k) => ({ pod, served: served[k] }))
      .filter((p) => !p.served.refused);
    const refused = served.length - valid.length;
    const refusedWhy = new Map<string, number>();
    for (const p of served.filter((s) => s.refused)) {
      const why = String(p.refused)
        .replace(/^.*?: /, '')
        .replace(/pss-\d+/g, 'pss-N')
        .slice(0, 120);
      refusedWhy.set(why, (refusedWhy.get(why) ?? 0) + 1);
    }
    const pairs = valid.flatMap(({ pod, served }) =>
      LEVELS.flatMap((level) => VERSIONS.map((version) => ({ pod, served, level, version }))),
    );
    const mismatches: string[] = [];
    const unexpected: string[] = [];
    const byCheck = new Map<string, number>();
    let denied = 0;
    let refusedLater = 0;
    let rawDiffers = 0;
    await pool(pairs, async ({ pod, served, level, version }) => {
      const r = await create(policyNs.get(key(level, version))!, pod);
      const message = String(r.status === 201 ? '' : (r.json().message ?? r.body));
      const at = message.indexOf('violates PodSecurity "');
      if (r.status === 422 && at < 0) return void refusedLater++;
      if (r.status !== 201 && (r.status !== 403 || at < 0))
        return void unexpected.push(
          `${pod.metadata.name} ${level}:${version}: ${r.status} ${message}`,
        );
      const live = at < 0 ? '' : message.slice(at);
      const violations = evaluatePodSecurity(level, version, served.metadata, served.spec);
      const mine = violations.length ? podSecurityMessage(level, version, violations) : '';
      if (live) denied++;
      // The Pod as submitted, before the API server's defaults: reported, not asserted.
      const raw = evaluatePodSecurity(level, version, pod.metadata, pod.spec);
      if (JSON.stringify(raw) !== JSON.stringify(violations)) rawDiffers++;
      for (const { id, check } of checksFor(level, policyMinor(version)!))
        if (check(served.metadata, served.spec)) byCheck.set(id, (byCheck.get(id) ?? 0) + 1);
      if (live !== mine)
        mismatches.push(
          `${pod.metadata.name} ${level}:${version}\n  API server: ${live || '(allowed)'}\n  annex:      ${mine || '(allowed)'}\n  pod: ${JSON.stringify({ metadata: { annotations: pod.metadata.annotations }, spec: pod.spec })}`,
        );
    });
    report(
      `${generated.length} Pods: ${refused} refused by validation before PodSecurity, ${valid.length} valid`,
    );
    const tally = (what: string, test: (spec: any) => boolean) =>
      `${valid.filter((p) => test(p.served.spec)).length} ${what}`;
    report(
      `  valid: ${[
        tally('Windows', (s) => s.os?.name === 'windows'),
        tally('hostUsers=false', (s) => s.hostUsers === false),
        tally('with init containers', (s) => !!s.initContainers?.length),
        tally('with volumes besides the service account token', (s) => s.volumes?.length > 1),
      ].join(', ')}`,
    );
    for (const [why, n] of [...refusedWhy].sort((a, b) => b[1] - a[1]).slice(0, 12))
      report(`  refused ${n}×: ${why}`);
    report(
      `${pairs.length} pairs (${LEVELS.length} levels × ${VERSIONS.length} versions: ${VERSIONS.join(', ')}); ${denied} denied by PodSecurity, ${pairs.length - denied - refusedLater - unexpected.length} allowed; ${refusedLater} refused later by validation`,
    );
    for (const [id, n] of [...byCheck].sort((a, b) => b[1] - a[1]))
      report(`  check ${id}: failed in ${n} pairs`);
    report(
      `${rawDiffers} pairs would differ evaluated on the Pod as submitted (before defaulting, e.g. hostNetwork copying containerPort to hostPort)`,
    );
    report(`mismatches: ${mismatches.length}; unexpected answers: ${unexpected.length}`);
    for (const m of mismatches.slice(0, 10)) report(m);
    for (const u of unexpected.slice(0, 10)) report(u);
    expect({ mismatches, unexpected }).toEqual({ mismatches: [], unexpected: [] });
  }, 1_200_000);

  // Ephemeral containers arrive by an update of pods/ephemeralcontainers: PodSecurity then
  // evaluates the whole pod (existing containers and the added ephemeral ones).
  it('agrees with the API server on pods/ephemeralcontainers updates', async () => {
    const bases: Record<string, any> = {
      base: { spec: {} },
      'base-userns': { spec: { hostUsers: false } },
    };
    const restricted = {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    };
    const served = new Map<string, any>();
    for (const [ns, name] of [...policyNs.values()].flatMap((ns) =>
      Object.keys(bases).map((name) => [ns, name] as const),
    )) {
      const r = await apiRequest('POST', `/api/v1/namespaces/${ns}/pods`, {
        body: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name },
          spec: {
            ...bases[name].spec,
            containers: [{ name: 'app', image: 'busybox:1.36', securityContext: restricted }],
          },
        },
      });
      if (r.status !== 201) throw new Error(`base pod ${ns}/${name}: ${r.status} ${r.body}`);
      served.set(`${ns}/${name}`, r.json());
    }
    const sets = pssEphemeralContainers(EPHEMERAL);
    const cases = sets.flatMap((ephemeralContainers, k) =>
      LEVELS.flatMap((level) =>
        VERSIONS.map((version) => ({
          ephemeralContainers,
          level,
          version,
          base: Object.keys(bases)[k % 2]!,
        })),
      ),
    );
    const mismatches: string[] = [];
    const unexpected: string[] = [];
    let refusedByValidation = 0;
    let denied = 0;
    await pool(cases, async ({ ephemeralContainers, level, version, base }) => {
      const ns = policyNs.get(key(level, version))!;
      const r = await apiRequest(
        'PATCH',
        `/api/v1/namespaces/${ns}/pods/${base}/ephemeralcontainers?dryRun=All`,
        {
          body: { spec: { ephemeralContainers } },
          headers: { 'content-type': 'application/strategic-merge-patch+json' },
        },
      );
      const message = String(r.status === 200 ? '' : (r.json().message ?? r.body));
      const at = message.indexOf('violates PodSecurity "');
      if (r.status === 422 && at < 0) return void refusedByValidation++;
      if (r.status !== 200 && (r.status !== 403 || at < 0))
        return void unexpected.push(`${base} ${level}:${version}: ${r.status} ${message}`);
      const live = at < 0 ? '' : message.slice(at);
      const pod = served.get(`${ns}/${base}`);
      const spec = { ...pod.spec, ephemeralContainers };
      const violations = evaluatePodSecurity(level, version, pod.metadata, spec);
      const mine = violations.length ? podSecurityMessage(level, version, violations) : '';
      if (live) denied++;
      if (live !== mine)
        mismatches.push(
          `${base} ${level}:${version}\n  API server: ${live || '(allowed)'}\n  annex:      ${mine || '(allowed)'}\n  ephemeral: ${JSON.stringify(ephemeralContainers)}`,
        );
    });
    report(
      `ephemeral containers: ${sets.length} sets × ${LEVELS.length * VERSIONS.length} policies = ${cases.length} updates; ${refusedByValidation} refused by validation before PodSecurity; ${denied} denied by PodSecurity; mismatches: ${mismatches.length}; unexpected answers: ${unexpected.length}`,
    );
    for (const m of mismatches.slice(0, 10)) report(m);
    for (const u of unexpected.slice(0, 10)) report(u);
    expect({ mismatches, unexpected }).toEqual({ mismatches: [], unexpected: [] });
  }, 600_000);
});
