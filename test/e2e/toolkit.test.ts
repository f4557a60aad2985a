// The Feature contract against the real API server: a webhook-only annex still serves
// /metrics behind delegated auth and a /readyz that means something; a user's feature
// is registered from its declaration, and a handler that throws is answered by its
// failurePolicy, as the API server treats a failing webhook.
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { validatingWebhook } from '../../src/admission/webhook.js';
import { renderObjects, declarationsOf, serviceRefOf } from '../../src/manifests/render.js';
import { loadConfig } from '../../src/config/load.js';
import { defineFeature, type Feature } from '../../src/core/feature.js';
import { StatusError } from '../../src/core/status.js';
import {
  annexGet,
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  pointAtTestAnnex,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  type ClusterInfo,
} from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';

describeCluster('the Feature contract', (c: ClusterInfo) => {
  const admin = [join(c.dir, 'admin.crt'), join(c.dir, 'admin.key')] as const;
  const jane = [join(c.dir, 'user.crt'), join(c.dir, 'user.key')] as const;
  let ns = '';
  let annex: TestAnnex;
  let registered: any[] = [];

  // A user's feature: two webhooks whose handlers throw, one per failurePolicy.
  const callers: boolean[] = [];
  const broken = (name: string, failurePolicy: 'Fail' | 'Ignore') =>
    validatingWebhook({
      name,
      match: { kinds: ['ConfigMap'], operations: ['CREATE'] },
      failurePolicy,
      admit: (req, ctx) => {
        callers.push(ctx.authenticated);
        if (req.namespace === ns) throw new TypeError(`secret value ${JSON.stringify(req.object)}`);
        return { allowed: true };
      },
    });
  // Fails open, yet refuses a ConfigMap named "refused" by throwing a StatusError: a decision.
  const refuses = validatingWebhook({
    name: 'refuses.example.com',
    match: { kinds: ['ConfigMap'], operations: ['CREATE'] },
    failurePolicy: 'Ignore',
    admit: (req) => {
      if (req.name !== 'refused') return { allowed: true };
      throw new StatusError(409, 'Conflict', 'the name "refused" is taken', {
        causes: [{ reason: 'FieldValueDuplicate', field: 'metadata.name', message: 'taken' }],
      });
    },
  });
  const mine: Feature = {
    name: 'broken',
    webhooks: [
      broken('fails-closed.example.com', 'Fail'),
      broken('fails-open.example.com', 'Ignore'),
      refuses,
    ],
  };

  beforeAll(async () => {
    ns = await createNamespace('toolkit');
    // Webhook-only: the metrics feature is off.
    annex = await startTestAnnex({ metrics: { enabled: false } }, [mine]);
  });
  afterAll(async () => {
    await deleteObjects(registered);
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
    await annex?.stop();
  });

  it('a webhook-only annex serves /metrics behind delegated authn/authz', async () => {
    const ok = await annexGet(annex, '/metrics', admin);
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('# TYPE annex_admission_review_duration_seconds histogram');
    expect((await annexGet(annex, '/metrics', jane)).status).toBe(403);
    expect((await annexGet(annex, '/metrics')).status).toBe(401);
    // No group is declared, so there is no aggregated API to find.
    expect((await annexGet(annex, '/apis/metrics.annex.dev/v1beta1', admin)).status).toBe(404);
  });

  it('/readyz lists every feature, without authentication', async () => {
    const r = await annexGet(annex, '/readyz?verbose');
    expect(r).toEqual({
      status: 200,
      body: '[+]ping ok\n[+]names ok\n[+]defaults ok\n[+]broken ok\n[+]admission-callers ok: no AdmissionReview yet\n[+]shutdown ok\nreadyz check passed\n',
    });
  });

  it("a user's webhook is registered from its declaration; a throwing handler gets its failurePolicy", async () => {
    const config = loadConfig({});
    const objs = renderObjects(declarationsOf([mine]), serviceRefOf(config)) as any[];
    for (const o of objs)
      for (const w of o.webhooks)
        w.namespaceSelector = { matchLabels: { 'kubernetes.io/metadata.name': ns } };
    registered = pointAtTestAnnex(objs, annex.port, annex.caBundle);
    await ensureAnnexService();
    await applyObjects(registered);

    const denied = await eventually(async () => {
      const r = await kubectl([
        'create',
        'configmap',
        'x',
        '-n',
        ns,
        '--from-literal=k=SECRET-VALUE',
      ]);
      expect(r.stderr).toContain('fails-closed.example.com');
      return r;
    });
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain(
      'admission webhook "fails-closed.example.com" denied the request: annex webhook "fails-closed.example.com" failed: TypeError',
    );
    // The handler's message quoted the object: the answer carries the error class only.
    expect(denied.stderr).not.toContain('SECRET-VALUE');
    // Its ReviewContext said the API server called (its client certificate, admission.clientCA).
    expect(callers.length).toBeGreaterThan(0);
    expect(callers.every((a) => a)).toBe(true);

    // Fail closed no more: only the Ignore webhook remains, and the request goes through with a warning.
    registered = registered.filter((o) => o.webhooks[0].name !== 'fails-closed.example.com');
    await kubectl(['delete', 'validatingwebhookconfiguration', 'annex-fails-closed']);
    const allowed = await eventually(async () => {
      const r = await kubectl(['create', 'configmap', 'y', '-n', ns, '--from-literal=k=v']);
      expect(r.code).toBe(0);
      return r;
    });
    expect(allowed.stderr).toContain(
      'Warning: annex webhook "fails-open.example.com" failed: TypeError; allowed (failurePolicy Ignore)',
    );
  });

  it('a StatusError thrown under failurePolicy Ignore is the denial it describes, as the API server reports it', async () => {
    // Registered by the test before (the feature's configurations are applied there).
    expect(registered.some((o) => o.webhooks[0].name === 'refuses.example.com')).toBe(true);
    const refused = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'refused' } };
    // kubectl names the reason (from `create -f`; `create configmap` prints "error: failed to create").
    const denied = await kubectl(['create', '-n', ns, '-f', '-'], {
      input: JSON.stringify(refused),
    });
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain(
      'Error from server (Conflict): error when creating "STDIN": admission webhook "refuses.example.com" denied the request: the name "refused" is taken',
    );
    // The same refusal, raw: the webhook's code, reason and causes are the API server's answer.
    const raw = await apiRequest('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: refused });
    expect(raw.status).toBe(409);
    expect(raw.json()).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      code: 409,
      reason: 'Conflict',
      message:
        'admission webhook "refuses.example.com" denied the request: the name "refused" is taken',
      details: {
        causes: [{ reason: 'FieldValueDuplicate', field: 'metadata.name', message: 'taken' }],
      },
    });
  });
});

describeCluster('readiness of the metrics feature', () => {
  let annex: TestAnnex;
  beforeAll(async () => {
    annex = await startTestAnnex({ metrics: { scrapeIntervalSeconds: 3 } });
  });
  afterAll(() => annex?.stop());

  it('is not ready until it holds data, as metrics-server', async () => {
    const first = await annexGet(annex, '/readyz');
    expect(first.status).toBe(503);
    expect(first.body).toContain('[-]metrics failed: no node and pod metrics collected yet');
    await eventually(async () =>
      expect(await annexGet(annex, '/readyz')).toEqual({ status: 200, body: 'ok' }),
    );
  });
});

describeCluster('FeatureContext: its own configuration and Events', () => {
  let annex: TestAnnex;
  let ns = '';
  const seen: unknown[] = [];
  const configured = defineFeature({
    name: 'configured',
    config: {
      schema: { type: 'object', properties: { greeting: { type: 'string', minLength: 1 } } },
      defaults: { greeting: 'hello', times: 1 },
    },
    start(ctx) {
      seen.push(ctx.config);
      ctx.events.record(ns, {
        // In the namespace it is about, as the policy feature's Events (recording.ts).
        regarding: { apiVersion: 'v1', kind: 'Namespace', namespace: ns, name: ns },
        reason: 'FeatureStarted',
        action: 'Start',
        note: `${ctx.config.greeting} x${ctx.config.times}`,
        type: 'Normal',
      });
    },
  });
  beforeAll(async () => {
    ns = await createNamespace('feature-ctx');
    annex = await startTestAnnex(
      {
        metrics: { enabled: false },
        featureConfig: { configured: { greeting: 'hi' } },
      },
      [configured],
    );
  });
  afterAll(async () => {
    await annex?.stop();
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  it('start gets featureConfig.<name> over the defaults; ctx.events writes an events.k8s.io Event as annex.dev/<name>', async () => {
    expect(seen).toEqual([{ greeting: 'hi', times: 1 }]);
    const event = await eventually(async () => {
      const r = await kubectl(['get', 'events.events.k8s.io', '-n', ns, '-o', 'json']);
      expect(r.code).toBe(0);
      const items = (JSON.parse(r.stdout) as { items: any[] }).items;
      const e = items.find((i) => i.reason === 'FeatureStarted');
      expect(e).toBeDefined();
      return e;
    });
    expect(event).toMatchObject({
      reportingController: 'annex.dev/configured',
      action: 'Start',
      note: 'hi x1',
      type: 'Normal',
      regarding: { kind: 'Namespace', name: ns },
    });
    expect(event.reportingInstance).toBeTruthy();
  });
});
