// Two replicas' peer endpoints on loopback with real certificates: each replica's view
// merges the other's decisions; a peer down is left out, never a failed list; a caller
// without a certificate from annex's CA is refused.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePemBundle } from '../apiserver/auth/x509.js';
import { createCa, ensureCertificates, issue, loadServingMaterial } from '../certs/index.js';
import { createLogger } from '../log.js';
import { listen, type Listening } from '../server/listen.js';
import { freePort } from '../devcluster/control-plane.js';
import { DecisionLog } from './decision-log.js';
import { PEER_DECISIONS_PATH, ReplicaView, type PeerTls } from './replicas.js';
import { appOf } from '../../test/unit/app-of.js';

const silent = createLogger('silent');
const request0 = {
  uid: 'u',
  kind: { group: '', version: 'v1', kind: 'ConfigMap' },
  resource: { group: '', version: 'v1', resource: 'configmaps' },
  namespace: 'shop',
  name: 'cm',
  operation: 'CREATE' as const,
};
const decision = (policy: string) => ({ policy, rule: 'r', action: 'Audit' as const, causes: [] });

describe('ReplicaView', () => {
  const dir = mkdtempSync(join(tmpdir(), 'annex-replicas-'));
  let tls: PeerTls;
  const replicas: { log: DecisionLog; server: Listening; url: string }[] = [];

  beforeAll(async () => {
    await ensureCertificates({ dir, service: 'annex', namespace: 'annex-system' });
    const m = loadServingMaterial(dir);
    tls = { ca: m.ca!, cert: m.cert, key: m.key };
    for (const name of ['a', 'b']) {
      const log = new DecisionLog({ maxEntries: 100, replica: name });
      const app = appOf({
        log: silent,
        features: [{ name: 'policy', peer: { decisions: () => ({ items: log.items() }) } }],
        annexCa: () => parsePemBundle(tls.ca),
      });
      const server = await listen(app, {
        host: '127.0.0.1',
        port: 0,
        keepAliveTimeoutSeconds: 100,
        tls: { cert: m.cert, key: m.key },
      });
      replicas.push({ log, server, url: server.url });
    }
  }, 60_000);
  afterAll(async () => {
    for (const r of replicas) await r.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const viewOf = (i: number, peers: string[], lines: string[] = []) =>
    new ReplicaView({
      local: replicas[i]!.log.store,
      peers: () => peers,
      tls: () => tls,
      serverName: 'annex.annex-system.svc',
      timeoutMs: 1000,
      log: {
        ...silent,
        warn: (o: object, m: string) => lines.push(`${JSON.stringify(o)} ${m}`),
      } as never,
    });

  it('lists both replicas from either, once each, even with itself among the peers', async () => {
    replicas[0]!.log.record(decision('on-a'), request0);
    replicas[1]!.log.record(decision('on-b'), request0);
    const all = replicas.map((r) => r.url);
    for (const i of [0, 1]) {
      const view = viewOf(i, all);
      const snap = await view.snapshot();
      expect(snap.items.map((o) => o.policy).sort()).toEqual(['on-a', 'on-b']);
      view.stop();
    }
  });

  it('leaves a peer that is down out, logs it once, and still lists', async () => {
    const dead = `https://127.0.0.1:${await freePort()}`;
    const lines: string[] = [];
    const view = viewOf(0, [dead, replicas[1]!.url], lines);
    expect((await view.snapshot()).items.map((o) => o.policy).sort()).toEqual(['on-a', 'on-b']);
    await view.snapshot();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(dead);
    expect(lines[0]).toContain('its decisions are left out');
    view.stop();
  });

  it('streams a peer decision to a watch by polling while it is open', async () => {
    const view = new ReplicaView({
      local: replicas[0]!.log.store,
      peers: () => [replicas[1]!.url],
      tls: () => tls,
      serverName: 'annex.annex-system.svc',
      timeoutMs: 1000,
      log: silent,
      pollMs: 50,
    });
    const snap = await view.snapshot();
    const got: string[] = [];
    const stop = view.subscribe(snap.resourceVersion, (e) =>
      got.push(`${e.type} ${e.object.policy}`),
    );
    replicas[0]!.log.record(decision('local-live'), request0);
    replicas[1]!.log.record(decision('peer-live'), request0);
    await expect
      .poll(() => got, { timeout: 3000 })
      .toEqual(['ADDED local-live', 'ADDED peer-live']);
    stop();
    view.stop();
  });

  it('refuses a caller without a certificate from annex CA', async () => {
    const other = await createCa({ commonName: 'someone-else' });
    const stranger = await issue({ ca: other, commonName: 'x', usages: ['clientAuth'] });
    const get = (id?: { cert: string; key: string }) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          new URL(PEER_DECISIONS_PATH, replicas[0]!.url),
          { ca: tls.ca, servername: 'localhost', ...id },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    expect(await get()).toBe(401);
    expect(await get({ cert: stranger.certPem, key: stranger.keyPem })).toBe(401);
    expect(await get({ cert: tls.cert, key: tls.key })).toBe(200);
  });
});
