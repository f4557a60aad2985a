// Differential test: annex's run-time filter (matchingRegistration → ruleMatches), which
// lets a request no registration could have sent through without running the handler,
// against the real kube-apiserver's matcher. Every rule of the corpus (test/fixtures/
// match-corpus.ts) is one webhook of one ValidatingWebhookConfiguration, each at its own
// URL path on a recording server here; an observer webhook matching everything records each
// request as the API server admits it. For every (rule, request) pair, "the API server called
// /r/<id>" must equal annex's answer for that rule and the AdmissionRequest the API server
// sent: the one /r/<id> received when it was called, the observer's otherwise, and for the
// kinds the API server never sends to webhooks the request as it would have built it.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureCertificates } from '../../src/certs/index.js';
import type { AdmissionRequest } from '../../src/admission/review.js';
import { allow, deny } from '../../src/admission/verdict.js';
import { matchingRegistration, validatingWebhook } from '../../src/admission/webhook.js';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  featureRegistrations,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { until } from '../cluster/direct.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';
import {
  equivalentOf,
  matchRequests,
  matchRules,
  type MatchRequest,
  type MatchRule,
} from '../fixtures/match-corpus.js';

const SEED = Number(process.env.ANNEX_MATCH_SEED ?? 0x3a7c4);
const DRAWN = 160;
const MIN_PER_DIMENSION = 20;
const report = (line: string) => console.error(`match-differential: ${line}`);

interface Recorded {
  /** "observe", or the rule id. */
  hook: string;
  request: AdmissionRequest & { userInfo?: { username?: string } };
}

/** Answers every review "allowed" and keeps what it received. */
function recordingServer(cert: string, key: string, into: Recorded[]): Server {
  return createServer({ cert, key }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const review = JSON.parse(body);
      const hook = (req.url ?? '').split('?')[0]!.replace(/^\/r\//, '');
      into.push({ hook, request: review.request });
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: review.apiVersion,
          kind: 'AdmissionReview',
          response: { uid: review.request.uid, allowed: true },
        }),
      );
    });
  });
}

/** The review of `r` as the API server would send it, for a kind it never sends. */
function builtRequest(r: MatchRequest): AdmissionRequest {
  const gvr = { group: r.group, version: r.version, resource: r.resource };
  return {
    uid: 'built',
    kind: { group: r.group, version: r.version, kind: r.exempt! },
    resource: gvr,
    ...(r.subResource ? { subResource: r.subResource } : {}),
    name: r.name,
    namespace: r.namespace,
    operation: r.operation,
  };
}

/** The pair's tags; each must be met by at least MIN_PER_DIMENSION pairs. */
function dimensions(m: MatchRule, r: MatchRequest, crGroup: string): string[] {
  const rule = m.rule;
  const d = [`scope ${rule.scope ?? 'unset'} × ${r.scope} object`, `operation ${r.operation}`];
  if (r.exempt) d.push('never sent to webhooks (configurations, policies, bindings)');
  else if (r.subResource) d.push('request on a subresource');
  for (const p of ['pods/status', '*/scale', '*/*', 'deployments/scale'])
    if (rule.resources.includes(p)) d.push(`rule resource ${p}`);
  if (rule.apiGroups.includes('*')) d.push('wildcard apiGroups');
  if (rule.apiVersions.includes('*')) d.push('wildcard apiVersions');
  if (rule.resources.some((x) => x.startsWith('*'))) d.push('wildcard resources');
  const eq = equivalentOf(r, crGroup);
  if (eq && rule.apiGroups.includes(eq.group) && rule.apiVersions.includes(eq.version))
    d.push(`matchPolicy ${m.matchPolicy}, rule on the request's other version or group`);
  return d;
}

/** Each needs MIN_PER_DIMENSION pairs; those marked `both`, some the API server called and some not. */
const REQUIRED_DIMENSIONS: [dimension: string, both: boolean][] = [
  ...['unset', '*', 'Cluster', 'Namespaced'].flatMap((s) =>
    (['namespaced', 'cluster', 'namespace'] as const).map((o): [string, boolean] => [
      `scope ${s} × ${o} object`,
      !((s === 'Cluster' && o === 'namespaced') || (s === 'Namespaced' && o !== 'namespaced')),
    ]),
  ),
  ...['CREATE', 'UPDATE', 'DELETE', 'CONNECT'].map((o): [string, boolean] => [
    `operation ${o}`,
    true,
  ]),
  ['request on a subresource', true],
  ['never sent to webhooks (configurations, policies, bindings)', false],
  ...['pods/status', '*/scale', '*/*', 'deployments/scale'].map((p): [string, boolean] => [
    `rule resource ${p}`,
    true,
  ]),
  ['wildcard apiGroups', true],
  ['wildcard apiVersions', true],
  ['wildcard resources', true],
  ["matchPolicy Exact, rule on the request's other version or group", false],
  ["matchPolicy Equivalent, rule on the request's other version or group", true],
];

describeCluster("webhook rules: annex's run-time filter equals the API server's matcher", () => {
  const suffix = randomBytes(3).toString('hex');
  const crGroup = `mdiff-${suffix}.annex.dev`;
  const webhookConfig = `annex-e2e-match-${suffix}`;
  const vap = `annex-e2e-match-${suffix}`;
  const recorded: Recorded[] = [];
  let dir: string;
  let server: Server;
  let ns: string;
  let victimNs: string;
  const node = `mdiff-${suffix}`;
  let cleanup: any[] = [];
  let rules: MatchRule[] = [];
  let corpus: MatchRequest[] = [];
  /** The test's own user, as the API server reports it: other requests are noise. */
  let admin = '';

  const post = async (path: string, body: unknown) => {
    const r = await apiRequest('POST', path, { body });
    if (r.status !== 201) throw new Error(`POST ${path}: ${r.status} ${r.body}`);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'annex-mdiff-'));
    const certs = await ensureCertificates({ dir, service: 'mdiff', namespace: 'annex-system' });
    server = recordingServer(certs.certPem, certs.keyPem, recorded);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;

    // What the requests act on.
    ns = await createNamespace('mdiff');
    victimNs = await createNamespace('mdiff-victim');
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${crGroup}` },
      spec: {
        group: crGroup,
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: ['v1', 'v2'].map((name) => ({
          name,
          served: true,
          storage: name === 'v1',
          schema: {
            openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
          },
        })),
      },
    };
    const container = { name: 'c', image: 'busybox' };
    const workload = {
      selector: { matchLabels: { app: 'x' } },
      template: { metadata: { labels: { app: 'x' } }, spec: { containers: [container] } },
    };
    const vapObject = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: vap },
      spec: {
        matchConstraints: {
          resourceRules: [
            { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['x'] },
          ],
        },
        validations: [{ expression: 'true' }],
      },
    };
    cleanup = [crd, vapObject, { kind: 'Node', metadata: { name: node } }];
    await applyObjects([
      crd,
      vapObject,
      { apiVersion: 'v1', kind: 'Node', metadata: { name: node } },
    ]);
    const inNs = (o: object) => ({ ...o, metadata: { ...(o as any).metadata, namespace: ns } });
    await applyObjects(
      [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'p' },
          spec: { containers: [container] },
        },
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 's' },
          spec: { selector: { app: 'x' }, ports: [{ port: 80 }] },
        },
        { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: workload },
        { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'st' }, spec: workload },
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs' }, spec: workload },
        {
          apiVersion: 'v1',
          kind: 'ReplicationController',
          metadata: { name: 'rc' },
          spec: { selector: { app: 'x' }, template: workload.template },
        },
        {
          apiVersion: 'autoscaling/v2',
          kind: 'HorizontalPodAutoscaler',
          metadata: { name: 'h' },
          spec: {
            scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd' },
            maxReplicas: 3,
          },
        },
      ].map(inNs),
    );
    await waitForCondition([`crd/widgets.${crGroup}`], 'Established');
    // The group is served a moment after Established.
    await until('the custom resource to be served', async () => {
      await post(`/apis/${crGroup}/v1/namespaces/${ns}/widgets`, {
        apiVersion: `${crGroup}/v1`,
        kind: 'Widget',
        metadata: { name: 'w' },
      });
      return true;
    });

    // One configuration: the observer, then one webhook per rule.
    const requests = matchRequests({ ns, victimNs, node, crGroup, webhookConfig, vap, suffix });
    rules = matchRules(requests, crGroup, DRAWN, SEED);
    const hook = (id: string, rule: object, matchPolicy: string) => ({
      name: `${id === 'observe' ? 'observe' : `r${id}`}.match.annex.dev`,
      clientConfig: { url: `https://127.0.0.1:${port}/r/${id}`, caBundle: certs.caBundle },
      rules: [rule],
      matchPolicy,
      failurePolicy: 'Ignore',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
      timeoutSeconds: 10,
    });
    const config = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: webhookConfig },
      webhooks: [
        hook(
          'observe',
          { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] },
          'Exact',
        ),
        ...rules.map((m) => hook(String(m.id), m.rule, m.matchPolicy)),
      ],
    };
    cleanup.push(config);
    // Created, not applied: the last-applied annotation would not fit.
    await post('/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', config);
    corpus = requests;

    // The API server loads configurations asynchronously: a sentinel request first.
    let n = 0;
    await until('the webhook configuration to be loaded', async () => {
      const name = `sentinel-${n++}`;
      await post(`/api/v1/namespaces/${ns}/configmaps?dryRun=All`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name },
      });
      const seen = recorded.find((x) => x.hook === 'observe' && x.request.name === name);
      admin = seen?.request.userInfo?.username ?? '';
      return seen !== undefined;
    });
  }, 180_000);

  afterAll(async () => {
    await deleteObjects(cleanup);
    await kubectl(['delete', 'namespace', ns, victimNs, '--wait=false']);
    server?.closeAllConnections();
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every (rule, request) pair: the API server called the webhook ⇔ annex matches', async () => {
    const mismatches: string[] = [];
    const counts = new Map<string, { pairs: number; called: number }>();
    let pairs = 0;
    let called = 0;
    let converted = 0;
    for (const r of corpus) {
      recorded.length = 0;
      const res = await apiRequest(r.method, r.path, {
        ...(r.body === undefined ? {} : { body: r.body }),
        ...(r.contentType ? { headers: { 'content-type': r.contentType } } : {}),
      });
      // Reviews of this request: its object's name, sent as the test's own user.
      const mine = recorded.filter(
        (x) => x.request.name === r.name && x.request.userInfo?.username === admin,
      );
      const observed = mine.find((x) => x.hook === 'observe')?.request;
      if (r.exempt) {
        // Admitted (validating webhooks run last), yet no webhook was called.
        expect(res.status, `${r.label}: ${res.body}`).toBeLessThan(300);
        expect(mine, `${r.label}: sent to webhooks`).toEqual([]);
      } else if (!observed) {
        throw new Error(`${r.label}: never reached the webhooks (${res.status} ${res.body})`);
      }
      for (const m of rules) {
        const sent = mine.find((x) => x.hook === String(m.id))?.request;
        const asked = sent ?? observed ?? builtRequest(r);
        const hook = validatingWebhook({
          name: `r${m.id}.match.annex.dev`,
          rules: [m.rule],
          matchPolicy: m.matchPolicy,
          admit: () => allow(),
        });
        const annex = matchingRegistration(hook, asked) !== undefined;
        const server = sent !== undefined;
        if (annex !== server)
          mismatches.push(
            `${r.label} × rule ${m.id} (${m.origin}) ${JSON.stringify(m.rule)} ${m.matchPolicy}: API server ${server ? 'called' : 'did not call'}, annex ${annex ? 'matches' : 'does not match'} ${JSON.stringify({ resource: asked.resource, subResource: asked.subResource, namespace: asked.namespace, kind: asked.kind })}`,
          );
        pairs++;
        if (server) called++;
        const to = sent?.resource;
        if (
          to &&
          observed &&
          (to.group !== observed.resource.group || to.version !== observed.resource.version)
        )
          converted++;
        for (const d of dimensions(m, r, crGroup)) {
          const c = counts.get(d) ?? { pairs: 0, called: 0 };
          c.pairs++;
          if (server) c.called++;
          counts.set(d, c);
        }
      }
    }
    report(
      `${pairs} pairs: ${rules.length} rules (seed ${SEED}) × ${corpus.length} requests; the API server called ${called}, ${converted} of them converted to an equivalent version`,
    );
    for (const [d, c] of [...counts].sort()) report(`  ${d}: ${c.pairs} pairs, ${c.called} called`);
    for (const m of mismatches) report(`MISMATCH ${m}`);
    expect(mismatches).toEqual([]);
    expect(pairs).toBeGreaterThanOrEqual(500);
    expect(converted).toBeGreaterThan(0);
    for (const [d, both] of REQUIRED_DIMENSIONS) {
      const c = counts.get(d) ?? { pairs: 0, called: 0 };
      expect(c.pairs, d).toBeGreaterThanOrEqual(MIN_PER_DIMENSION);
      if (both) expect([c.called > 0, c.called < c.pairs], d).toEqual([true, true]);
    }
  });
});

// The case issue 21 found live: a user webhook with scope Cluster refusing the deletion of
// protected Namespaces was called by the API server, then let the request through unrun.
describeCluster('a Cluster-scoped webhook on Namespaces runs its handler', () => {
  let annex: TestAnnex;
  let vault: string;
  let registered: any[] = [];
  const labelOf = (o: unknown) => (o as any)?.metadata?.labels?.protected;
  const guard = validatingWebhook({
    name: 'protected-namespaces.example.com',
    rules: [
      {
        operations: ['DELETE'],
        apiGroups: [''],
        apiVersions: ['v1'],
        resources: ['namespaces'],
        scope: 'Cluster',
      },
    ],
    failurePolicy: 'Fail',
    // In the same configuration: a request that shows the API server has loaded it.
    also: [
      {
        name: 'sentinel.example.com',
        rules: [
          {
            operations: ['CREATE'],
            apiGroups: [''],
            apiVersions: ['v1'],
            resources: ['configmaps'],
          },
        ],
      },
    ],
    admit: (req) =>
      req.resource.resource === 'configmaps'
        ? deny('sentinel')
        : labelOf(req.oldObject) === 'true'
          ? deny(`namespace ${req.name} is protected`)
          : allow(),
  });

  beforeAll(async () => {
    vault = await createNamespace('vault');
    await kubectlOk(['label', 'namespace', vault, 'protected=true']);
    annex = await startTestAnnex(
      {
        admission: { names: { enabled: false }, defaults: { enabled: false } },
        metrics: { enabled: false },
      } as any,
      [{ name: 'guards', webhooks: [guard] }],
    );
    registered = featureRegistrations(annex, 'guards', {
      webhooks: ['protected-namespaces.example.com', 'sentinel.example.com'],
      namespace: vault,
    });
    await ensureAnnexService();
    await applyObjects(registered);
    let n = 0;
    await until('the webhook configuration to be loaded', async () => {
      const r = await kubectl([
        'create',
        'configmap',
        `sentinel-${n++}`,
        '-n',
        vault,
        '--dry-run=server',
      ]);
      return r.code !== 0 && r.stderr.includes('sentinel');
    });
  });

  afterAll(async () => {
    await deleteObjects(registered);
    await kubectl(['delete', 'namespace', vault, '--wait=false']);
    await annex?.stop();
  });

  it('kubectl delete of a protected Namespace is refused', async () => {
    const r = await kubectl(['delete', 'namespace', vault, '--dry-run=server']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `admission webhook "protected-namespaces.example.com" denied the request: namespace ${vault} is protected`,
    );
  });
});
