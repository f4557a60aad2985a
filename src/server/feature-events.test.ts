import { Writable } from 'node:stream';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { EventInput } from '../core/feature.js';
import { KubeApiError } from '../kube/errors.js';
import type { EventBody, EventSink } from '../kube/events.js';
import { WorkQueue } from '../kube/workqueue.js';
import { createLogger } from '../log.js';
import { eventController, featureEvents } from './feature-events.js';

const denied: EventInput = {
  regarding: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' },
  reason: 'PolicyViolation',
  action: 'Denied',
  note: 'AdmissionPolicy p rule r denied CREATE of Deployment shop/web',
  type: 'Warning',
};

function sink(fail?: KubeApiError) {
  const created: { ns: string; event: EventBody }[] = [];
  const s: EventSink = {
    create: async (ns, event) => {
      if (fail) throw fail;
      created.push({ ns, event });
    },
    patchSeries: async () => {},
  };
  return { sink: s, created };
}

function logLines() {
  const lines: Record<string, unknown>[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { log: createLogger('info', dest), lines };
}

describe('ctx.events: a feature Event recorder built by the composition root', () => {
  it('reports as annex.dev/<feature> from this host, through the shared queue', async () => {
    const queue = new WorkQueue();
    const { sink: s, created } = sink();
    const h = featureEvents({ name: 'policy' }, { sink: s, queue, log: logLines().log });
    h.events.record('shop', denied);
    await queue.idle();
    expect(created).toHaveLength(1);
    const { ns, event } = created[0]!;
    expect(ns).toBe('shop');
    expect(event).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      reportingController: 'annex.dev/policy',
      reportingInstance: hostname().slice(0, 128),
      reason: 'PolicyViolation',
      action: 'Denied',
      type: 'Warning',
      regarding: denied.regarding,
    });
    await h.stop();
    h.events.record('shop', { ...denied, note: 'after stop' });
    await queue.idle();
    expect(created).toHaveLength(1);
    await queue.shutDown();
  });

  it("takes the feature's instance and limits (Feature.events)", async () => {
    const queue = new WorkQueue();
    const { sink: s, created } = sink();
    const h = featureEvents(
      { name: 'guard', events: { instance: 'annex-0', burst: 1, refillMs: 60_000 } },
      { sink: s, queue, log: logLines().log },
    );
    h.events.record('shop', denied);
    h.events.record('shop', { ...denied, note: 'another' });
    await queue.idle();
    // The second waits a minute for the object's one token.
    expect(created.map((c) => c.event.reportingInstance)).toEqual(['annex-0']);
    await h.stop();
    await queue.shutDown();
  });

  it('records nothing without an API server, and never throws', async () => {
    const queue = new WorkQueue();
    const h = featureEvents({ name: 'x' }, { sink: null, queue, log: logLines().log });
    expect(() => h.events.record('shop', denied)).not.toThrow();
    expect(queue.stats()).toMatchObject({ depth: 0, processing: 0 });
    await h.stop();
  });

  it("logs a refused write with the feature's logger, as the policy feature did", async () => {
    const queue = new WorkQueue();
    const refused = new KubeApiError('POST', '/apis/events.k8s.io/v1/namespaces/shop/events', {
      code: 422,
      reason: 'Invalid',
      message: 'bad',
    });
    const { log, lines } = logLines();
    const h = featureEvents({ name: 'policy' }, { sink: sink(refused).sink, queue, log });
    h.events.record('shop', denied);
    await queue.idle();
    expect(lines.find((l) => l.msg === 'event not written')).toMatchObject({
      level: 40, // warn
      action: 'Denied',
      regarding: 'web',
    });
    await h.stop();
    await queue.shutDown();
  });

  it('names the controller after the feature where a qualified name allows', () => {
    expect(eventController('policy')).toBe('annex.dev/policy');
    expect(eventController('validating-lb-guard.example.com')).toBe(
      'annex.dev/validating-lb-guard.example.com',
    );
    expect(eventController('my feature')).toBe('annex.dev/annex');
    expect(eventController('x'.repeat(64))).toBe('annex.dev/annex');
  });
});
