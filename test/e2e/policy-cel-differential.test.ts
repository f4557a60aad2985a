// Differential test of the CEL compiler (src/policy/cel/): every demo policy that
// compiles, and generated variants covering the translatable subset, is applied to the
// real kube-apiserver (v1.37.2) as the ValidatingAdmissionPolicy + binding compileToCel
// generates; a seeded corpus of Deployments is sent to it (server dry-run creates, ≤ 8
// at a time) and the server's verdict and text must equal what evaluate() — the
// webhook's path — says for the same (defaulted) object.
//
// Each policy is confined to its own namespace (match.namespaces, which compiles to a
// namespaceSelector), so all are applied at once and each answer is one policy's. The
// object evaluate() sees is the one the API server's admission sees: the corpus object
// as a dry-run create in a namespace no policy covers returns it, defaulted.
//
// What is compared is the policy's own text: after `denied request: ` for a VAP
// denial, after `<Kind> "<name>" is invalid: ` for the webhook's 422; for Warn, the VAP
// warning after `with binding '…': ` against the webhook's warnings without their
// `<policy>: ` prefix, joined as one message (`w`, or `[w1, w2]`).
import { Agent } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AdmissionRequest } from '../../src/admission/review.js';
import type { KubeObject } from '../../src/core/types.js';
import { loadKubeconfig } from '../../src/kube/kubeconfig.js';
import { KubeClient } from '../../src/kube/client.js';
import {
  celObjects,
  compileToCel,
  POLICY_LABEL,
  syncCel,
  vapName,
  type CelObjects,
} from '../../src/policy/cel/index.js';
import { compilePolicy, type CompiledPolicy } from '../../src/policy/compile.js';
import { evaluate } from '../../src/policy/evaluate.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
} from '../cluster/harness.js';
import { pool } from '../cluster/pool.js';

const POLICIES = join(import.meta.dirname, '..', '..', 'policies');
const demo = (f: string) => parse(readFileSync(join(POLICIES, f), 'utf8')) as Record<string, any>;

const policy = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'policy.annex.dev/v1alpha1',
  kind: 'AdmissionPolicy',
  metadata: { name },
  spec: { match: { kinds: ['apps/Deployment'] }, ...spec },
});

/** Variants: the demo policies reshaped into the subset, and each translatable rule kind. */
const VARIANTS = [
  policy('app-name-deny', { validate: demo('app-name-label.yaml').spec.validate }),
  policy('pinned-images-cel', {
    validate: [
      {
        name: 'containers',
        path: '$.spec.template.spec.containers[*].image',
        schema: { type: 'string', pattern: '^[^@]*:[^:/@]+$|@sha256:[0-9a-f]{64}$', maxLength: 40 },
      },
      {
        name: 'init-containers',
        path: '$.spec.template.spec.initContainers[*].image',
        schema: { type: 'string', pattern: '^[^@]*:[^:/@.]+$' },
        message: 'must be pinned to a tag',
      },
    ],
  }),
  policy('host-network-cel', {
    actions: ['Deny'],
    validate: [
      {
        name: 'no-host-network',
        path: '$.spec.template.spec.hostNetwork',
        schema: { const: false },
        message: "shares the node's network",
      },
    ],
  }),
  policy('shape', {
    validate: [
      {
        name: 'ports',
        path: '$.spec.template.spec.containers[*].ports[*].containerPort',
        schema: { type: 'integer', minimum: 80, maximum: 9000 },
      },
      { name: 'replicas', path: '$.spec.replicas', schema: { enum: [1, 2, 3] } },
      {
        name: 'privileged',
        path: '$.spec.template.spec.containers[*].securityContext.privileged',
        forbidden: true,
        message: 'no privileged containers',
      },
      { name: 'strategy', path: '$.spec.strategy.type', schema: { const: 'RollingUpdate' } },
    ],
  }),
  policy('requests-cel', {
    match: { kinds: ['apps/Deployment'], operations: ['CREATE'] },
    mutate: [
      {
        name: 'requests',
        path: '$.spec.template.spec.containers[*]',
        setIfAbsent: { resources: { requests: { cpu: '100m', memory: '128Mi' } } },
      },
      {
        name: 'init-requests',
        path: '$.spec.template.spec.initContainers[*]',
        setIfAbsent: { resources: { requests: { cpu: '50m' } } },
      },
      {
        name: 'team',
        path: '$.metadata',
        setIfAbsent: { labels: { team: 'unknown' }, annotations: { owner: 'nobody' } },
      },
    ],
    validate: [
      {
        name: 'owner',
        path: '$.metadata.annotations.owner',
        schema: { type: 'string', pattern: '^[a-z]+$' },
      },
    ],
  }),
  policy('label-names', {
    validate: [
      { name: 'label-values', path: '$.metadata.labels[*]', nameRule: 'dns1035Label' },
      // A map key that is a CEL keyword.
      { name: 'no-namespace-label', path: '$.metadata.labels.namespace', forbidden: true },
      { name: 'team', path: "$.metadata.annotations['team']", nameRule: 'labelValue' },
      { name: 'subdomain', path: "$.metadata.annotations['host']", nameRule: 'dns1123Subdomain' },
      {
        name: 'owner',
        path: '$.metadata.annotations.owner',
        schema: { type: 'string', minLength: 3, maxLength: 12, pattern: '^[a-z]+(?:\\.[a-z]+)?$' },
      },
    ],
  }),
];

/** A seeded generator of Deployments, valid for the API server's own validation. */
function corpus(n: number): KubeObject[] {
  // mulberry32: a linear congruential generator's low bits repeat with a short period.
  let seed = 0xce1;
  const rand = (k: number) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % k;
  };
  const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
  const names = ['web', 'web.front', 'a1', 'api-v2', `${'x'.repeat(64)}`, 'db.main.eu', '1st'];
  const images = [
    'nginx',
    'nginx:latest',
    'nginx:1.27',
    'registry:5000/team/app',
    'registry:5000/team/app:v1',
    `app@sha256:${'ab12'.repeat(16)}`,
    'ghcr.io/a-very-long-organisation-name/service:2024.11.01',
    'busybox:1.36.1',
  ];
  const values = ['web', 'Web_1', '9lives', 'a.b', 'api-v2', '', 'x'.repeat(64), 'z'];
  const annotations = [
    'ops',
    'Ops Team',
    'qa "core"',
    'tab\there',
    'naïve',
    'ab',
    'dev.team',
    'a'.repeat(20),
    'web.example.com',
    '-bad-',
  ];
  const out: KubeObject[] = [];
  for (let i = 0; i < n; i++) {
    const labels: Record<string, string> = { app: `w${i}` };
    if (rand(2)) labels['app.kubernetes.io/name'] = pick(values);
    if (rand(3) === 0) labels.tier = pick(values);
    if (rand(4) === 0) labels.team = pick(values);
    if (rand(5) === 0) labels.namespace = pick(values);
    const ann: Record<string, string> = {};
    for (const k of ['team', 'host', 'owner']) if (rand(2)) ann[k] = pick(annotations);
    const container = (j: number) => {
      const c: Record<string, unknown> = { name: `c${j}`, image: pick(images) };
      if (rand(2)) {
        c.ports = Array.from({ length: 1 + rand(2) }, (_, p) => ({
          containerPort: pick([80, 443, 8080, 9090, 22, 65000]) + p,
        }));
      }
      if (rand(4) === 0) c.securityContext = { privileged: rand(2) === 0 };
      if (rand(3) === 0) {
        c.resources = pick([
          { requests: { cpu: '250m' } },
          { limits: { memory: '1Gi' } },
          { requests: { cpu: '1', memory: '64Mi' } },
        ]);
      }
      return c;
    };
    const spec: Record<string, unknown> = {
      containers: Array.from({ length: 1 + rand(3) }, (_, j) => container(j)),
    };
    if (rand(4) === 0) spec.initContainers = [{ name: 'init', image: pick(images) }];
    if (rand(3) === 0) spec.hostNetwork = rand(2) === 0;
    const name = rand(3) === 0 ? pick(names) : `d${i}`;
    out.push({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: name.includes('x'.repeat(64)) ? name : `${name}-${i}`.replace(/^(.{60}).*$/, '$1'),
        labels,
        ...(Object.keys(ann).length ? { annotations: ann } : {}),
      },
      spec: {
        ...(rand(4) ? { replicas: rand(6) } : {}),
        ...(rand(5) === 0 ? { strategy: { type: 'Recreate' } } : {}),
        selector: { matchLabels: { app: `w${i}` } },
        template: { metadata: { labels: { app: `w${i}` } }, spec },
      },
    } as KubeObject);
  }
  return out;
}

const request = (o: KubeObject, namespace: string): AdmissionRequest => ({
  uid: 'diff',
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  namespace,
  name: o.metadata?.name as string,
  operation: 'CREATE',
  object: { ...o, metadata: { ...o.metadata, namespace } },
});

/** JSON with sorted keys: the API server's order is its structs', the webhook's is insertion. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );

/** The fields mutate rules change, as JSON (for comparing objects). */
const changed = (o: KubeObject) => {
  const spec = (o as unknown as { spec: { template: { spec: Record<string, unknown> } } }).spec
    .template.spec;
  return canonical([
    o.metadata?.labels,
    o.metadata?.annotations,
    spec.containers,
    spec.initContainers,
  ]);
};

/** One message the way denyInvalid joins causes: `a`, or `[a, b]`. */
const joined = (xs: string[]) => (xs.length === 1 ? xs[0]! : `[${xs.join(', ')}]`);

/** The VAP warnings in a (node-joined) Warning header, unescaped, after their prefix. */
function vapWarnings(header: string | string[] | undefined): string[] {
  const text = Array.isArray(header) ? header.join(', ') : (header ?? '');
  return [...text.matchAll(/299 - "((?:[^"\\]|\\.)*)"/g)]
    .map((m) => m[1]!.replace(/\\(.)/g, '$1'))
    .filter((w) => w.startsWith('Validation failed for ValidatingAdmissionPolicy '))
    .map((w) => w.replace(/^.*? with binding '[^']*': /, ''));
}

interface Case {
  compiled: CompiledPolicy;
  ns: string;
}

describeCluster(
  'AdmissionPolicies compiled to ValidatingAdmissionPolicy vs the webhook path',
  (cp) => {
    const sources = [
      ...[
        'workload-names.yaml',
        'app-name-label.yaml',
        'host-network.yaml',
        'pinned-images.yaml',
        'default-requests.yaml',
      ].map(demo),
      ...VARIANTS,
    ];
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });

    it('same verdicts and messages for every object × compiled policy', async () => {
      const plain = await createNamespace('celdefaults');
      const cases: Case[] = [];
      const skipped: string[] = [];
      const objects: unknown[] = [];
      for (const src of sources) {
        const probe = compileToCel(compilePolicy(src));
        if ('reason' in probe) {
          skipped.push(`${src.metadata.name}: ${probe.reason}`);
          continue;
        }
        const ns = await createNamespace(`cel-${src.metadata.name}`.slice(0, 40));
        // Confined to its namespace: the compiled objects get a namespaceSelector for it.
        const compiled = compilePolicy({
          ...src,
          spec: { ...src.spec, match: { ...src.spec.match, namespaces: [ns] } },
        });
        const cel = compileToCel(compiled);
        if ('reason' in cel) throw new Error(cel.reason);
        objects.push(...[cel.vap, cel.binding, cel.map, cel.mapBinding].filter((o) => o));
        cases.push({ compiled, ns });
      }
      // Demo policies that compile, and the rest (which stay on the webhook) named.
      expect(cases.map((c) => c.compiled.name).slice(0, 2)).toEqual([
        'workload-names',
        'app-name-label',
      ]);
      expect(skipped.length).toBe(3);
      await kubectlOk(['apply', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
      });

      // The corpus as the API server's admission sees it: defaulted by a dry-run create.
      const defaulted: KubeObject[] = [];
      let refused = 0;
      await pool(corpus(250), async (o) => {
        const r = await apiRequest(
          'POST',
          `/apis/apps/v1/namespaces/${plain}/deployments?dryRun=All`,
          {
            body: o,
            agent,
          },
        );
        if (r.status === 201) defaulted.push(r.json() as KubeObject);
        else refused++;
      });
      expect(defaulted.length).toBeGreaterThanOrEqual(200);

      const send = (o: KubeObject, ns: string) =>
        apiRequest('POST', `/apis/apps/v1/namespaces/${ns}/deployments?dryRun=All`, {
          body: {
            ...o,
            metadata: {
              ...o.metadata,
              namespace: ns,
              resourceVersion: undefined,
              uid: undefined,
              creationTimestamp: undefined,
              managedFields: undefined,
            },
          },
          agent,
        });

      // Enforcement starts when the API server has loaded each policy: wait for one object
      // the webhook path refuses (or warns about) to be refused (or warned about) natively.
      for (const c of cases) {
        const bad = defaulted.find((o) => {
          const e = evaluate([c.compiled], request(o, c.ns));
          return !e.allowed || e.warnings.length > 0;
        });
        expect(bad, c.compiled.name).toBeDefined();
        for (let t = Date.now(); ;) {
          const r = await send(bad!, c.ns);
          if (r.status !== 201 || vapWarnings(r.headers.warning).length) break;
          if (Date.now() - t > 20_000)
            throw new Error(`${c.compiled.name} not enforced after 20 s`);
          await new Promise((res) => setTimeout(res, 100));
        }
      }

      const mismatches: string[] = [];
      const counts = { requests: 0, denied: 0, warned: 0, allowed: 0, mutated: 0 };
      const codes = new Set<string>();
      const work = cases.flatMap((c) => defaulted.map((o) => ({ c, o })));
      await pool(work, async ({ c, o }) => {
        const r = await send(o, c.ns);
        counts.requests++;
        const e = evaluate([c.compiled], request(o, c.ns));
        const webhook = e.allowed
          ? `allowed${e.warnings.length ? ` warn ${joined(e.warnings.map((w) => w.slice(c.compiled.name.length + 2)))}` : ''}`
          : `denied ${String(e.status?.message).replace(/^.*? is invalid: /, '')}`;
        let server: string;
        if (r.status === 201) {
          const w = vapWarnings(r.headers.warning);
          // What mutations made of the object: the fields the policies touch.
          if (e.mutated) counts.mutated++;
          const theirs = changed(r.json() as KubeObject);
          const ours = changed(e.mutated ?? o);
          server = `allowed${w.length ? ` warn ${w.join(' | ')}` : ''}${theirs === ours ? '' : ` as ${theirs}`}`;
          if (theirs !== ours)
            mismatches.push(`${c.compiled.name} × ${o.metadata?.name}: webhook's object ${ours}`);
          counts[w.length ? 'warned' : 'allowed']++;
        } else {
          const status = r.json() as { code: number; reason: string; message: string };
          codes.add(`${status.code} ${status.reason}`);
          server = status.message.includes(
            `ValidatingAdmissionPolicy '${vapName(c.compiled.name)}'`,
          )
            ? `denied ${status.message.replace(/^.*? denied request: /, '')}`
            : `HTTP ${r.status}: ${status.message}`;
          counts.denied++;
        }
        if (server !== webhook) {
          mismatches.push(
            `${c.compiled.name} × ${o.metadata?.name}\n  server:  ${server}\n  webhook: ${webhook}`,
          );
        }
      });
      agent.destroy();
      console.log(
        `policy CEL differential: ${defaulted.length} objects × ${cases.length} policies = ${counts.requests} requests ` +
          `(${counts.denied} denied, ${counts.warned} warned, ${counts.allowed} allowed, ${counts.mutated} of them mutated; ${refused} corpus objects refused by built-in validation), ` +
          `${mismatches.length} mismatches; native denials: ${[...codes].join(', ')}; on the webhook: ${skipped.join('; ')}`,
      );
      expect(mismatches.slice(0, 5).join('\n')).toBe('');
      expect(counts.denied).toBeGreaterThan(200);
      expect(counts.allowed).toBeGreaterThan(200);
      expect(counts.warned).toBeGreaterThan(20);
      expect(counts.mutated).toBeGreaterThan(50);
    }, 90_000);

    it('what a native denial looks like: 422 Invalid by default (even unset), 403 only with reason Forbidden', async () => {
      const src = demo('workload-names.yaml');
      const seen: string[] = [];
      for (const reason of ['Invalid', 'unset', 'Forbidden'] as const) {
        const ns = await createNamespace(`celtext-${reason.toLowerCase()}`);
        const compiled = compilePolicy({
          ...src,
          metadata: { name: `names-${reason.toLowerCase()}` },
          spec: { ...src.spec, match: { ...src.spec.match, namespaces: [ns] } },
        });
        const cel = compileToCel(compiled) as CelObjects;
        const validation = (cel.vap!.spec as { validations: { reason?: string }[] })
          .validations[0]!;
        expect(validation.reason).toBe('Invalid'); // what compileToCel generates
        if (reason === 'unset') delete validation.reason;
        else validation.reason = reason;
        await kubectlOk(['apply', '-f', '-'], {
          input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [cel.vap, cel.binding] }),
        });
        const create = ['-n', ns, 'create', 'deployment', 'web.front', '--image=nginx:1.27'];
        const manifest = await kubectlOk([...create, '--dry-run=client', '-o', 'json']);
        let k = await kubectl([...create, '--dry-run=server']);
        for (let t = Date.now(); k.code === 0 && Date.now() - t < 20_000;) {
          await new Promise((r) => setTimeout(r, 100));
          k = await kubectl([...create, '--dry-run=server']);
        }
        const f = await kubectl(['-n', ns, 'create', '--dry-run=server', '-f', '-'], {
          input: manifest,
        });
        const r = await apiRequest(
          'POST',
          `/apis/apps/v1/namespaces/${ns}/deployments?dryRun=All`,
          {
            body: JSON.parse(manifest),
          },
        );
        const status = r.json() as { code: number; reason: string };
        const last = (t: string) => t.trim().split('\n').at(-1);
        seen.push(
          `${reason}: ${status.code} ${status.reason}\n  create deployment: ${last(k.stderr)}\n  create -f: ${last(f.stderr)}`,
        );
      }
      console.log(`native denials as measured:\n${seen.join('\n')}`);
      const own =
        'denied request: metadata.name: Invalid value: "web.front": must not contain dots';
      const by = (r: string) =>
        `ValidatingAdmissionPolicy 'annex-names-${r}' with binding 'annex-names-${r}-binding' ${own}`;
      expect(seen).toEqual(
        (['invalid', 'unset'] as const)
          .map(
            (r) =>
              `${r === 'invalid' ? 'Invalid' : 'unset'}: 422 Invalid\n  create deployment: error: failed to create deployment: deployments.apps "web.front" is forbidden: ${by(r)}\n  create -f: The deployments "web.front" is invalid: : ${by(r)}`,
          )
          .concat(
            `Forbidden: 403 Forbidden\n  create deployment: error: failed to create deployment: deployments.apps "web.front" is forbidden: ${by('forbidden')}\n  create -f: Error from server (Forbidden): error when creating "STDIN": deployments.apps "web.front" is forbidden: ${by('forbidden')}`,
          ),
      );
      // The webhook's 422 for the same object, as kubectl prints it (src/cli/check.ts' text).
      const e = evaluate(
        [compilePolicy(src)],
        request(
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'web.front' },
          } as KubeObject,
          'default',
        ),
      );
      expect(e.status?.message).toBe(
        'Deployment.apps "web.front" is invalid: metadata.name: Invalid value: "web.front": must not contain dots',
      );
      console.log(`webhook (422 Invalid): ${e.status?.message}`);
    });

    it('syncCel keeps the generated objects equal to the policy set (apply, then delete)', async () => {
      const client = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
      const names = async () =>
        (
          await kubectlOk([
            'get',
            'validatingadmissionpolicies,validatingadmissionpolicybindings',
            '-l',
            POLICY_LABEL,
            '-o',
            'name',
          ])
        )
          .split('\n')
          .filter((l) => l)
          .sort();
      const all = sources.map((s) => compilePolicy(s));
      await syncCel(client, celObjects(all));
      const applied = await names();
      expect(applied).toContain(
        'validatingadmissionpolicy.admissionregistration.k8s.io/annex-workload-names',
      );
      expect(applied).toContain(
        'validatingadmissionpolicybinding.admissionregistration.k8s.io/annex-app-name-label-binding',
      );
      expect(applied.some((n) => n.endsWith('/annex-pinned-images'))).toBe(false);
      const managers = await kubectlOk([
        'get',
        'validatingadmissionpolicy',
        'annex-workload-names',
        '-o',
        'jsonpath={.metadata.managedFields[*].manager}',
      ]);
      expect(managers.split(' ')).toContain('annex');
      await syncCel(client, celObjects(all.filter((p) => p.name === 'workload-names')));
      expect((await names()).filter((n) => n.includes('app-name-label'))).toEqual([]);
      await syncCel(client, new Map());
      expect(await names()).toEqual([]);
      client.close();
    });
  },
);
