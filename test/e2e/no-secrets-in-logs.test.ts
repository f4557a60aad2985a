// Security: a recognisable Secret value goes everywhere annex can meet it, against the real
// kube-apiserver: Secrets, ConfigMaps and Deployments through the built-in webhooks and
// AdmissionPolicies (allowed, denied, warned, audited, updated), the decision log and the
// Events, aggregated API requests with the value in a selector (answered and refused),
// malformed reviews sent to annex directly. Then every log annex wrote (its JSON log at
// debug, the process's stdout and stderr meanwhile), the decision log, the Events and the
// kube-apiserver's log since the start are searched for the value, plain and base64: absent.
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.js';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  featureRegistrations,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
  type ClusterInfo,
} from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';

const repo = join(import.meta.dirname, '..', '..');
const CANARY = `canary-${randomBytes(12).toString('hex')}`;
const FORMS = [CANARY, Buffer.from(CANARY).toString('base64')];

describeCluster('no Secret value in any log', (c: ClusterInfo) => {
  let ns = '';
  let annex: TestAnnex;
  let stopped = false;
  let registered: any[] = [];
  let annexLog = '';
  const sink = new PassThrough();
  sink.on('data', (d: Buffer) => (annexLog += d.toString()));
  const apiServerLog = join(c.dir, 'kube-apiserver.log');
  let apiServerLogFrom = 0;
  let processOutput = '';
  const spies: { mockRestore(): void }[] = [];

  const policy = (name: string, spec: object) => ({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec: { ...spec, match: { ...(spec as any).match, namespaces: [ns] } },
  });
  const secret = (name: string, data: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns, annotations: { note: CANARY } },
    data: Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
  });
  const post = (path: string, body: unknown) =>
    apiRequest('POST', `/api/v1/namespaces/${ns}/${path}`, { body });

  /** POST straight to annex (as the API server would, but malformed). */
  const postAnnex = (path: string, body: string) =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: annex.port,
          path,
          method: 'POST',
          ca: readFileSync(join(annex.certsDir, 'ca.crt')),
          servername: 'localhost',
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  beforeAll(async () => {
    apiServerLogFrom = statSync(apiServerLog).size;
    // Whatever annex (or a library of its) prints outside its logger.
    for (const stream of [process.stdout, process.stderr]) {
      const write = stream.write.bind(stream);
      spies.push(
        vi.spyOn(stream, 'write').mockImplementation(((chunk: unknown, ...rest: any[]) => {
          processOutput += String(chunk);
          return write(chunk as string, ...rest);
        }) as typeof stream.write),
      );
    }
    ns = await createNamespace('leak');
    await kubectlOk(['apply', '-f', join(repo, 'manifests/crds/admissionpolicies.yaml')]);
    await kubectlOk(['apply', '-f', join(repo, 'manifests/crds/policyexceptions.yaml')]);
    await waitForCondition(
      ['crd/admissionpolicies.policy.annex.dev', 'crd/policyexceptions.policy.annex.dev'],
      'Established',
    );
    annex = await startTestAnnex(
      {
        metrics: { enabled: false },
        policy: { enabled: true, native: false, events: true } as any,
        log: { level: 'debug' },
      },
      [],
      { log: createLogger('debug', sink) },
    );
    registered = [
      ...featureRegistrations(annex, 'policy', { webhooks: ['policies.annex.dev'], namespace: ns }),
      ...featureRegistrations(annex, 'names', { webhooks: ['names.annex.dev'], namespace: ns }),
      ...featureRegistrations(annex, 'defaults', {
        webhooks: ['defaults.annex.dev', 'custom-resource-defaults.annex.dev'],
        namespace: ns,
      }),
    ];
    await ensureAnnexService();
    await applyObjects(registered);
    await waitForCondition(['apiservice/v1alpha1.audit.annex.dev'], 'Available');
    await applyObjects([
      policy('no-token', {
        match: { kinds: ['Secret'] },
        actions: ['Deny'],
        validate: [{ name: 'token', path: '$.data.token', forbidden: true, message: 'no tokens' }],
      }),
      ...(['Warn', 'Audit'] as const).map((action) =>
        policy(`${action.toLowerCase()}-configmaps`, {
          match: { kinds: ['ConfigMap'] },
          actions: [action],
          validate: [
            { name: 'short', path: '$.data.value', schema: { maxLength: 8 }, message: 'too long' },
          ],
        }),
      ),
    ]);
  }, 120_000);

  afterAll(async () => {
    for (const s of spies) s.mockRestore();
    await kubectl([
      'delete',
      'admissionpolicy',
      'no-token',
      'warn-configmaps',
      'audit-configmaps',
      '--wait=false',
    ]);
    await deleteObjects(registered);
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
    if (!stopped) await annex?.stop();
  });

  it('the value is in none of them, after a scenario that reached every path', async () => {
    const configMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: ns, labels: { app: 'x' } },
      data: { value: CANARY },
    };
    // The policies are live once the token Secret is refused and the ConfigMap warned about.
    await eventually(async () => {
      const r = await post('secrets?dryRun=All', secret('probe', { token: CANARY }));
      const w = await post('configmaps?dryRun=All', configMap);
      return r.status >= 400 && w.headers.warning ? r : undefined;
    }, 30_000);

    const created = await post('secrets', secret('kept', { password: CANARY }));
    expect(created.status).toBe(201);
    const denied = await post('secrets', secret('refused', { token: CANARY, password: CANARY }));
    expect(denied.status).toBeGreaterThanOrEqual(400);
    expect(denied.json().message).toContain('no tokens');
    const updated = await apiRequest('PUT', `/api/v1/namespaces/${ns}/secrets/kept`, {
      body: { ...secret('kept', { password: `${CANARY}-2` }), metadata: created.json().metadata },
    });
    expect(updated.status).toBe(200);

    const cm = await post('configmaps', configMap);
    expect(cm.status).toBe(201);
    expect(String(cm.headers.warning)).toContain('too long');

    const env = [{ name: 'PASSWORD', value: CANARY }];
    const pod = (name: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns, annotations: { note: CANARY } },
      spec: { containers: [{ name: 'app', image: 'nginx:1.27', env, args: [CANARY] }] },
    });
    // Defaulted by annex (dry run: no kubelet here), then refused for its name.
    expect((await post('pods?dryRun=All', pod('web'))).status).toBe(201);
    expect((await post('pods?dryRun=All', pod('Web_1'))).status).toBe(422);
    const deploy = await apiRequest(
      'POST',
      `/apis/apps/v1/namespaces/${ns}/deployments?dryRun=All`,
      {
        body: {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: ns },
          spec: {
            selector: { matchLabels: { app: 'web' } },
            template: {
              metadata: { labels: { app: 'web' } },
              spec: { containers: [{ name: 'app', image: 'nginx:1.27', env }] },
            },
          },
        },
      },
    );
    expect(deploy.status).toBe(201);

    // The aggregated API: the value in selectors, a list answered and one refused.
    const events = `/apis/audit.annex.dev/v1alpha1/namespaces/${ns}/admissionevents`;
    const q = (s: string) => encodeURIComponent(s);
    expect((await apiRequest('GET', `${events}?labelSelector=${q(`app=${CANARY}`)}`)).status).toBe(
      200,
    );
    expect((await apiRequest('GET', `${events}?labelSelector=${q(`${CANARY}==(`)}`)).status).toBe(
      400,
    );
    expect(
      (await apiRequest('GET', `${events}?fieldSelector=${q(`metadata.name=${CANARY}`)}`)).status,
    ).toBe(200);
    // Malformed reviews straight at annex: not JSON, and a review of the wrong shape.
    expect(await postAnnex('/validate/policies.annex.dev', `{"request": "${CANARY}`)).toBe(400);
    expect(
      await postAnnex(
        '/mutate/defaults.annex.dev',
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          request: { uid: CANARY },
        }),
      ),
    ).toBe(400);

    // What the decisions left behind, through the API server.
    const decisions = await eventually(async () => {
      const r = await apiRequest('GET', events);
      const items = r.status === 200 ? (r.json().items as any[]) : [];
      return items.length >= 3 ? items : undefined;
    }, 20_000);
    expect(new Set(decisions.map((d) => d.decision))).toEqual(new Set(['Deny', 'Warn', 'Audit']));
    const kubeEvents = await eventually(async () => {
      const r = await apiRequest('GET', `/apis/events.k8s.io/v1/namespaces/${ns}/events`);
      const items = (r.json().items as any[]).filter(
        (e) => e.reportingController === 'annex.dev/policy',
      );
      return items.length >= 3 ? items : undefined;
    }, 20_000);
    stopped = true;
    await annex.stop();

    // The API server logs a selector it cannot parse itself, before any call to annex:
    // the client's doing, not annex's. Every other line it wrote meanwhile is searched.
    const apiLog = readFileSync(apiServerLog)
      .subarray(apiServerLogFrom)
      .toString()
      .split('\n')
      .filter((l) => !/requestinfo\.go:\d+\] "Couldn't parse request"/.test(l))
      .join('\n');
    const places = {
      'annex log': annexLog,
      'stdout/stderr': processOutput,
      'decision log': JSON.stringify(decisions),
      'Kubernetes Events': JSON.stringify(kubeEvents),
      'kube-apiserver log': apiLog,
    };
    for (const [where, text] of Object.entries(places))
      for (const form of FORMS) {
        const lines = text.split('\n').filter((l) => l.includes(form));
        expect(
          lines.map((l) => l.slice(0, 400)),
          `${form} in the ${where}`,
        ).toEqual([]);
      }
    // The search covered real output: reviews of every webhook, refusals, aggregated requests.
    for (const line of [
      '"msg":"admission review"',
      '"webhook":"policies"',
      '"webhook":"defaults"',
      '"webhook":"names"',
      '"path":"/validate/policies.annex.dev"',
      'admissionevents',
    ])
      expect(annexLog).toContain(line);
    console.error(
      `annex: searched ${annexLog.split('\n').length} annex log lines, ${apiLog.split('\n').length} kube-apiserver log lines, ${decisions.length} decisions, ${kubeEvents.length} Events: no secret value`,
    );
  });
});
