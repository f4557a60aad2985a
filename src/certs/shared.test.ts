import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { act, plan, type Action, type Issuer, type SharedState } from './shared.js';
import { createCa, issue } from './issue.js';

const dnsNames = ['annex.annex-system.svc', 'localhost'].sort();
const opts = { dnsNames, overlapMs: 1000, caRenewBeforeMs: 0, leafRenewBeforeMs: 0 };
const issuer: Issuer = {
  ca: () => createCa({ validityDays: 30 }),
  leaf: (ca) => issue({ ca, commonName: 'annex', usages: ['serverAuth', 'clientAuth'], dnsNames }),
};

const certs = (bundle: string) =>
  bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!.map((p) => new X509Certificate(p));
/** Whether a caBundle trusts a serving certificate. */
const trusts = (bundle: string, leaf: string) =>
  certs(bundle).some((ca) => new X509Certificate(leaf).verify(ca.publicKey));

describe('shared CA rotation', () => {
  it('creates, then rotates with the new CA beside the old at every step', async () => {
    let s: SharedState = { data: {}, phase: 'stable', since: 0, rotateRequested: false };
    const steps: Action[] = [];
    const history: SharedState[] = [];
    let now = 10_000;
    const step = async () => {
      const a = plan(s, now, opts);
      steps.push(a);
      if (a === 'none') return;
      const next = await act(a, s.data, issuer);
      history.push(s);
      s = { data: next.data, phase: next.phase, since: now, rotateRequested: false };
    };
    await step(); // create
    await step(); // nothing to do
    s.rotateRequested = true;
    await step(); // publish
    await step(); // too early to switch
    now += 1000;
    await step(); // switch
    now += 1000;
    await step(); // drop old
    await step();
    expect(steps).toEqual(['create', 'none', 'publish', 'none', 'switch', 'drop-old', 'none']);
    history.push(s);
    // Across each step, a replica may still serve the previous leaf while caBundles show
    // the new bundle, or serve the new leaf while caBundles still show the previous one.
    for (let i = 1; i < history.length; i++) {
      const [a, b] = [history[i - 1]!.data, history[i]!.data];
      if (!a['tls.crt']) continue;
      expect(trusts(b['ca.crt']!, a['tls.crt']!)).toBe(true);
      expect(trusts(a['ca.crt']!, b['tls.crt']!)).toBe(true);
    }
    const first = history[1]!.data;
    expect(certs(s.data['ca.crt']!)).toHaveLength(1);
    expect(s.data['ca.crt']).not.toBe(first['ca.crt']);
    expect(trusts(s.data['ca.crt']!, first['tls.crt']!)).toBe(false); // the old CA is gone
    expect(s.data).not.toHaveProperty('next.key');
  });

  it('renews only the leaf (same CA, no overlap needed) when the names change', async () => {
    const created = await act('create', {}, issuer);
    const s: SharedState = { data: created.data, phase: 'stable', since: 0, rotateRequested: false };
    expect(plan(s, Date.now(), { ...opts, dnsNames: [...dnsNames, 'annex.example'] })).toBe('renew-leaf');
    const renewed = await act('renew-leaf', s.data, issuer);
    expect(renewed.data['ca.crt']).toBe(created.data['ca.crt']);
    expect(renewed.data['tls.crt']).not.toBe(created.data['tls.crt']);
  });

  it('renews a leaf without clientAuth (replicas present it to each other as a client)', async () => {
    const created = await act('create', {}, issuer);
    const s: SharedState = { data: created.data, phase: 'stable', since: 0, rotateRequested: false };
    expect(plan(s, Date.now(), opts)).toBe('none');
    const serverOnly = await act('renew-leaf', s.data, {
      ...issuer,
      leaf: (ca) => issue({ ca, commonName: 'annex', usages: ['serverAuth'], dnsNames }),
    });
    expect(plan({ ...s, data: serverOnly.data }, Date.now(), opts)).toBe('renew-leaf');
  });
});
