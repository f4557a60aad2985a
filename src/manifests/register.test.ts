import { describe, expect, it, vi } from 'vitest';
import type { KubeClient } from '../kube/client.js';
import { createLogger } from '../log.js';
import { registerWhenReady, withCaBundle } from './register.js';

const hook = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name: 'annex-names' },
  webhooks: [{ name: 'a', clientConfig: { service: { name: 'annex' } } }],
};
const api = { kind: 'APIService', metadata: { name: 'v1.x.dev' }, spec: { group: 'x.dev' } };

function fakeKube() {
  const calls: { path: string; body: any; type: string; opts: unknown }[] = [];
  let fail = false;
  const kube = {
    patch: async (path: string, body: unknown, type: string, opts: unknown) => {
      if (fail) throw new Error('forbidden');
      calls.push({ path, body, type, opts });
    },
  } as unknown as KubeClient;
  return { kube, calls, setFail: (f: boolean) => (fail = f) };
}

const log = createLogger('silent');
const tick = () => new Promise((r) => setTimeout(r, 30));

describe('registerWhenReady', () => {
  it('applies a unit only once it is ready, as field manager annex, with the bundle', async () => {
    const { kube, calls } = fakeKube();
    let ready = false;
    const r = registerWhenReady({
      kube,
      units: [{ name: 'names', objects: () => [hook], ready: () => ready }],
      caBundle: () => 'Q0E=',
      log,
      intervalMs: 10,
    });
    await tick();
    expect(calls).toEqual([]);
    ready = true;
    await r.settled();
    r.stop();
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      path: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/annex-names',
      type: 'apply',
      opts: { fieldManager: 'annex', force: true },
    });
    expect(calls[0]!.body.webhooks[0].clientConfig.caBundle).toBe('Q0E=');
    expect(hook.webhooks[0]!.clientConfig).not.toHaveProperty('caBundle');
  });

  it('re-applies when the CA bundle changes, and retries after a failure', async () => {
    const { kube, calls, setFail } = fakeKube();
    let bundle = 'b2xk';
    setFail(true);
    const r = registerWhenReady({
      kube,
      units: [{ name: 'metrics', objects: () => [api], ready: () => true }],
      caBundle: () => bundle,
      log,
      intervalMs: 10,
    });
    await tick();
    expect(r.registered()).toEqual([]);
    setFail(false);
    await r.settled();
    bundle = 'bmV3';
    await tick();
    await r.settled();
    r.stop();
    expect(calls.map((c) => c.body.spec.caBundle)).toEqual(['b2xk', 'bmV3']);
    expect(r.registered()).toEqual(['metrics']);
  });

  it('withCaBundle sets every caBundle on a copy', () => {
    const two = { ...hook, webhooks: [hook.webhooks[0], hook.webhooks[0]] };
    const out = withCaBundle(two, 'eA==');
    expect(out.webhooks.map((w: any) => w.clientConfig.caBundle)).toEqual(['eA==', 'eA==']);
    expect(withCaBundle(api, 'eA==').spec.caBundle).toBe('eA==');
  });

  it('re-renders a unit whose rules change at run time, applying every field each time', async () => {
    const { kube, calls } = fakeKube();
    const rules: unknown[] = [];
    const live = () => [
      { ...hook, webhooks: [{ ...hook.webhooks[0], sideEffects: 'None', rules }] },
    ];
    const r = registerWhenReady({
      kube,
      units: [{ name: 'policy', objects: live, ready: () => true }],
      caBundle: () => 'Q0E=',
      log,
      intervalMs: 10_000,
    });
    await r.settled();
    rules.push({ operations: ['CREATE'], resources: ['pods'] });
    r.changed('policy');
    await r.settled();
    r.stop();
    expect(calls).toHaveLength(2);
    // The second apply still carries what the first set: an apply that leaves a field out
    // gives it up, and the API server refuses a webhook without them.
    expect(calls[1]!.body.webhooks[0]).toMatchObject({
      sideEffects: 'None',
      clientConfig: { caBundle: 'Q0E=' },
      rules: [{ operations: ['CREATE'], resources: ['pods'] }],
    });
  });

  it('backs off a failing unit (0.5 s doubling), but tries a changed one at once', async () => {
    const { kube, calls, setFail } = fakeKube();
    let attempts = 0;
    const counting = {
      patch: async (...a: Parameters<KubeClient['patch']>) => {
        attempts++;
        return kube.patch(...a);
      },
    } as unknown as KubeClient;
    let group = 'x.dev';
    setFail(true);
    vi.useFakeTimers();
    try {
      const r = registerWhenReady({
        kube: counting,
        units: [{ name: 'm', objects: () => [{ ...api, spec: { group } }], ready: () => true }],
        caBundle: () => 'Q0E=',
        log,
        intervalMs: 5,
      });
      const wait = (ms: number) => vi.advanceTimersByTimeAsync(ms);
      await wait(0);
      expect(attempts).toBe(1);
      await wait(498);
      expect(attempts).toBe(1); // the polls do not hammer a unit backing off
      await wait(2);
      expect(attempts).toBe(2); // then 1 s later
      await wait(998);
      expect(attempts).toBe(2);
      group = 'y.dev'; // a new rendering is tried without waiting
      await wait(5);
      expect(attempts).toBe(3);
      setFail(false);
      r.changed('m');
      await wait(0);
      await r.settled();
      r.stop();
    } finally {
      vi.useRealTimers();
    }
    expect(calls.map((c) => c.body.spec.group)).toEqual(['y.dev']);
  });
});
