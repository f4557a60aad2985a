// ExternalMetric sources under the cluster admin's control, on the real control plane: its
// own etcd + kube-apiserver, and a kube-controller-manager running only the ClusterRole
// aggregation controller, so that `edit` carries annex:externalmetrics-editor as in any
// cluster. "jane" (client certificate) is bound to `edit` in namespace team and nothing
// else: she may write ExternalMetrics there, and annex must not become her deputy — no
// loopback (or any unlisted) URL, no count outside her namespace, no fetched bytes in
// status. The cluster admin's allow-listed source and cross-namespace count work. Last, a
// link-local (metadata) URL is refused before any packet is sent, proven with annex
// running in a network namespace this test builds (test/cluster/netns.ts).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ControlPlane, type ClusterInfo } from '../../src/devcluster/control-plane.js';
import * as wire from '../../src/devcluster/wire.js';
import { AUTHOR_ANNOTATION } from '../../src/scaling/author.js';
import { featureRegistrations, startTestAnnex, type TestAnnex } from '../cluster/annex.js';
import { cli } from '../cluster/cli.js';
import { describeCluster, kubectl } from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';
import {
  createTrap,
  METADATA_ADDRESS,
  PEER_ADDRESS,
  REDIRECT_URL,
  trapUnavailable,
  type Trap,
} from '../cluster/netns.js';

const TEAM = 'team';
const OTHER = 'other';
type Who = 'admin' | 'jane';

describeCluster(
  "ExternalMetric sources under the cluster admin's control (own control plane)",
  (shared) => {
    const cp = new ControlPlane(shared.binDir, shared.version);
    let c: ClusterInfo;
    let annex: TestAnnex | undefined;
    const servers: Server[] = [];
    /** Connections each local source accepted. */
    const connections = { allowed: 0, private: 0 };
    let allowedBase: string;
    let privateBase: string;

    const k = async (args: string[], who: Who = 'admin', input?: string) => {
      const kubeconfig = who === 'admin' ? c.adminKubeconfig : c.userKubeconfig;
      const r = await kubectl(args, { as: { kubeconfig }, ...(input ? { input } : {}) });
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} (as ${who}): ${r.stderr}`);
      return r.stdout;
    };
    const run: wire.Kubectl = (args, input) => k(args, 'admin', input);
    const em = (name: string, spec: object, annotations?: Record<string, string>) => ({
      apiVersion: 'metrics.annex.dev/v1alpha1',
      kind: 'ExternalMetric',
      metadata: { name, namespace: TEAM, ...(annotations ? { annotations } : {}) },
      spec: { intervalSeconds: 1, timeoutSeconds: 2, ...spec },
    });
    const create = (who: Who, ...objs: object[]) =>
      k(['create', '-f', '-'], who, objs.map((o) => JSON.stringify(o)).join('\n'));
    const get = async (name: string) =>
      JSON.parse(await k(['get', 'externalmetric', name, '-n', TEAM, '-o', 'json']));
    const availableOf = (o: any) => o.status?.conditions?.find((x: any) => x.type === 'Available');
    /** The object once its Available condition has this reason for its current generation. */
    const settled = (name: string, reason: string, timeoutMs = 30_000) =>
      eventually(async () => {
        const o = await get(name);
        const a = availableOf(o);
        return a?.reason === reason && a.observedGeneration === o.metadata.generation
          ? o
          : undefined;
      }, timeoutMs);
    const author = (o: any) => JSON.parse(o.metadata.annotations[AUTHOR_ANNOTATION]);

    /** The author webhook is in force once a dry run comes back with an author. */
    const probe = () =>
      kubectl(['create', '-f', '-', '--dry-run=server', '-o', 'json'], {
        as: { kubeconfig: c.userKubeconfig },
        input: JSON.stringify(em('probe', { objects: { apiVersion: 'v1', resource: 'pods' } })),
      });
    const webhookInForce = () =>
      eventually(async () => {
        const r = await probe();
        return r.code === 0 && JSON.parse(r.stdout).metadata.annotations?.[AUTHOR_ANNOTATION]
          ? true
          : undefined;
      });

    beforeAll(async () => {
      const t0 = Date.now();
      c = await cp.start(() => {}, {
        controllerManager: { controllers: ['clusterrole-aggregation-controller'] },
      });
      await wire.applyObjects(run, wire.repoManifest('manifests/crds/externalmetrics.yaml'));
      const roles = wire
        .repoManifest('manifests/rbac.yaml')
        .filter(
          (o) => o.kind === 'ClusterRole' && o.metadata.name.startsWith('annex:externalmetrics-'),
        );
      expect(roles.map((o) => o.metadata.name)).toEqual([
        'annex:externalmetrics-reader',
        'annex:externalmetrics-editor',
      ]);
      await wire.applyObjects(run, roles);
      for (const ns of [TEAM, OTHER]) {
        await k(['create', 'namespace', ns]);
        await k(['create', 'serviceaccount', 'default', '-n', ns]);
      }
      const pod = (name: string, ns: string) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: ns },
        spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
      });
      await wire.applyObjects(run, [
        pod('a', TEAM),
        pod('b', OTHER),
        pod('c', OTHER),
        pod('d', OTHER),
      ]);
      await k([
        'create',
        'rolebinding',
        'jane-edit',
        '--clusterrole=edit',
        '--user=jane',
        '-n',
        TEAM,
      ]);
      // The aggregation controller has folded annex's roles into edit.
      await eventually(async () =>
        (
          await kubectl(
            ['auth', 'can-i', 'create', 'externalmetrics.metrics.annex.dev', '-n', TEAM],
            {
              as: { kubeconfig: c.userKubeconfig },
            },
          )
        ).stdout.trim() === 'yes'
          ? true
          : undefined,
      );
      const cannot = await kubectl(['auth', 'can-i', 'list', 'pods', '-A'], {
        as: { kubeconfig: c.userKubeconfig },
      });
      expect(cannot.stdout.trim()).toBe('no');

      const serve = (
        name: keyof typeof connections,
        handler: (path: string) => [number, Record<string, string>, string],
      ) => {
        const s = createServer((req, res) => {
          const [code, headers, body] = handler(req.url!);
          res.writeHead(code, headers).end(body);
        });
        s.on('connection', () => connections[name]++);
        servers.push(s);
        return new Promise<string>((r) =>
          s.listen(0, '127.0.0.1', () =>
            r(`http://127.0.0.1:${(s.address() as AddressInfo).port}`),
          ),
        );
      };
      privateBase = await serve('private', () => [200, {}, '{"secret": 42}']);
      allowedBase = await serve('allowed', (path) =>
        path === '/allowed/html'
          ? [200, { 'content-type': 'text/html' }, '<html>token=SECRET-7f3a</html>']
          : path === '/allowed/redirect'
            ? [302, { location: `${privateBase}/` }, '']
            : [200, {}, '{"v": 5}'],
      );
      annex = await startTestAnnex({
        kube: { kubeconfig: c.adminKubeconfig },
        metrics: { enabled: false },
        admission: { names: { enabled: false }, defaults: { enabled: false } } as never,
        // The admin's list: one URL prefix on loopback, and the name "localhost" (which
        // resolves to loopback, so it is refused after DNS).
        scaling: {
          enabled: true,
          allow: { urls: [`${allowedBase}/allowed/`], hosts: ['localhost'], cidrs: [] },
        },
      });
      await wire.ensureAnnexService(run);
      const registrations = featureRegistrations(annex, 'scaling', { webhooks: [], namespace: '' });
      expect(registrations.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
        'MutatingWebhookConfiguration/annex-externalmetrics',
        'APIService/v1beta1.external.metrics.k8s.io',
        'APIService/v1beta2.custom.metrics.k8s.io',
      ]);
      await wire.applyObjects(run, registrations);
      await webhookInForce();
      await eventually(async () => {
        const a = JSON.parse(
          await k(['get', 'apiservice', 'v1beta1.external.metrics.k8s.io', '-o', 'json']),
        );
        return (
          a.status?.conditions?.some((x: any) => x.type === 'Available' && x.status === 'True') ||
          undefined
        );
      });
      console.error(
        `externalmetric-sources e2e: set up in ${((Date.now() - t0) / 1000).toFixed(1)}s`,
      );
    }, 120_000);

    afterAll(async () => {
      await annex?.stop();
      for (const s of servers) {
        s.closeAllConnections();
        s.close();
      }
      await cp.stop();
    });

    it("refuses ExternalMetric writes while only the install's placeholder is registered (nothing goes unrecorded)", async () => {
      const placeholder = wire
        .repoManifest('manifests/registrations.yaml')
        .filter((o) => o.metadata.name === 'annex-externalmetrics');
      expect(placeholder).toHaveLength(1);
      // As `kubectl apply -k manifests/` leaves it before annex has registered itself.
      await k(['delete', 'mutatingwebhookconfiguration', 'annex-externalmetrics']);
      await wire.applyObjects(run, placeholder);
      try {
        const refused = await eventually(async () => {
          const r = await probe();
          return r.code !== 0 ? r.stderr : undefined;
        });
        expect(refused).toMatch(/failed calling webhook "externalmetrics\.metrics\.annex\.dev"/);
      } finally {
        await k(['delete', 'mutatingwebhookconfiguration', 'annex-externalmetrics']);
        await wire.applyObjects(
          run,
          featureRegistrations(annex!, 'scaling', { webhooks: [], namespace: '' }).filter(
            (o) => o.kind === 'MutatingWebhookConfiguration',
          ),
        );
        await webhookInForce();
      }
    });

    it("refuses a namespace editor's loopback URL, by address or by a listed name that resolves to loopback, before connecting", async () => {
      await create(
        'jane',
        em('peek', { json: { url: `${privateBase}/`, path: '$.secret' } }),
        em('peek-by-name', {
          json: { url: privateBase.replace('127.0.0.1', 'localhost') + '/', path: '$.secret' },
        }),
      );
      const peek = availableOf(await settled('peek', 'SourceRefused'));
      expect(peek).toMatchObject({
        status: 'False',
        message: `GET ${privateBase}/: refused: 127.0.0.1 is loopback, refused unless annex's scaling.allow names this address`,
      });
      const byName = availableOf(await settled('peek-by-name', 'SourceRefused'));
      expect(byName.message).toMatch(
        /^GET http:\/\/localhost:\d+\/: refused: localhost resolves to (127\.0\.0\.1|::1), which is loopback, refused unless annex's scaling\.allow names this address$/,
      );
      // What an HPA (or jane) reads through the aggregator: the same reason, no value.
      const raw = await kubectl(
        ['get', '--raw', `/apis/external.metrics.k8s.io/v1beta1/namespaces/${TEAM}/peek`],
        {
          as: { kubeconfig: c.adminKubeconfig },
        },
      );
      expect(raw.stderr).toMatch(
        /metric peek is unavailable \(ExternalMetric team\/peek\): GET .*: refused: 127\.0\.0\.1 is loopback/,
      );
      const table = await k(['get', 'externalmetrics', '-n', TEAM], 'jane');
      console.error(`--- kubectl get externalmetrics -n team (as jane)\n${table}`);
      expect(table.split('\n')[0]).toMatch(/^NAME\s+VALUE\s+AVAILABLE\s+REASON\s+AGE$/);
      expect(table).toMatch(/^peek\s+False\s+SourceRefused\s+\S+$/m);
      expect(connections.private).toBe(0);
    });

    it("counts in the editor's own namespace; refuses her count of another namespace and of all, with the reason; the admin's works", async () => {
      const pods = { apiVersion: 'v1', resource: 'pods' };
      await create(
        'jane',
        em('my-pods', { objects: pods }),
        em('all-pods', { objects: { ...pods, namespace: '*' } }),
        em('other-pods', { objects: { ...pods, namespace: OTHER } }),
      );
      await create('admin', em('all-pods-admin', { objects: { ...pods, namespace: '*' } }));
      expect((await settled('my-pods', 'ValueRead')).status.value).toBe('1');
      const all = await settled('all-pods', 'Unauthorized');
      expect(author(all)).toMatchObject({
        username: 'jane',
        groups: expect.arrayContaining(['system:authenticated']),
      });
      expect(availableOf(all).message).toBe(
        `user "jane" (who wrote this ExternalMetric's spec) may not list pods in all namespaces: annex counts outside namespace team only what the author may list`,
      );
      expect(all.status).toMatchObject({ available: false });
      expect(all.status).not.toHaveProperty('value');
      expect(availableOf(await settled('other-pods', 'Unauthorized')).message).toMatch(
        /^user "jane" .* may not list pods in namespace other:/,
      );
      const admin = await settled('all-pods-admin', 'ValueRead');
      expect(admin.status.value).toBe('4');
      expect(author(admin).username).toBe('annex-admin');
    });

    it('records the author itself: a forged annotation is overwritten, a metadata edit keeps it, a spec edit makes the editor the author', async () => {
      const adminRecord = (await get('all-pods-admin')).metadata.annotations[AUTHOR_ANNOTATION];
      await create(
        'jane',
        em(
          'forged',
          { objects: { apiVersion: 'v1', resource: 'pods', namespace: '*' } },
          { [AUTHOR_ANNOTATION]: adminRecord },
        ),
      );
      const forged = await settled('forged', 'Unauthorized');
      expect(author(forged).username).toBe('jane');
      // Touching metadata of the admin's metric (here: the record itself) changes nothing.
      const janeRecord = forged.metadata.annotations[AUTHOR_ANNOTATION];
      await k(
        [
          'annotate',
          '--overwrite',
          'externalmetric',
          'all-pods-admin',
          '-n',
          TEAM,
          `${AUTHOR_ANNOTATION}=${janeRecord}`,
        ],
        'jane',
      );
      await k(['label', 'externalmetric', 'all-pods-admin', '-n', TEAM, 'touched=yes'], 'jane');
      const kept = await get('all-pods-admin');
      expect(kept.metadata.annotations[AUTHOR_ANNOTATION]).toBe(adminRecord);
      expect(kept.metadata.labels).toEqual({ touched: 'yes' });
      expect(availableOf(kept).reason).toBe('ValueRead');
      // Changing what it counts makes it jane's, and so refused.
      await k(
        [
          'patch',
          'externalmetric',
          'all-pods-admin',
          '-n',
          TEAM,
          '--type=merge',
          '-p',
          JSON.stringify({ spec: { objects: { labelSelector: 'app=web' } } }),
        ],
        'jane',
      );
      const taken = await settled('all-pods-admin', 'Unauthorized');
      expect(taken.metadata.generation).toBe(2);
      expect(author(taken).username).toBe('jane');
    });

    it("reads the admin's allow-listed source; says a bad body is bad without quoting it; does not follow a redirect", async () => {
      await create(
        'admin',
        em('allowed', { json: { url: `${allowedBase}/allowed/v`, path: '$.v' } }),
        em('html', { json: { url: `${allowedBase}/allowed/html`, path: '$.v' } }),
        em('moved', { json: { url: `${allowedBase}/allowed/redirect`, path: '$.v' } }),
      );
      expect((await settled('allowed', 'ValueRead')).status).toMatchObject({
        value: '5',
        available: true,
      });
      const served = JSON.parse(
        await k([
          'get',
          '--raw',
          `/apis/external.metrics.k8s.io/v1beta1/namespaces/${TEAM}/allowed`,
        ]),
      );
      expect(served.items[0]).toMatchObject({ metricName: 'allowed', value: '5' });
      const html = await settled('html', 'ParseFailed');
      expect(html.status.lastError).toBe('the body is not JSON (at byte 0)');
      expect(JSON.stringify(html)).not.toContain('SECRET');
      const moved = await settled('moved', 'FetchFailed');
      expect(availableOf(moved).message).toBe(
        `GET ${allowedBase}/allowed/redirect: HTTP 302 (redirects are not followed)`,
      );
      expect(connections.allowed).toBeGreaterThan(0);
      expect(connections.private).toBe(0);
      console.error(
        `--- kubectl get externalmetrics -n team -o wide\n${await k(['get', 'externalmetrics', '-n', TEAM, '-o', 'wide'])}`,
      );
    });

    const noTrap =
      trapUnavailable() ?? (existsSync(cli) ? undefined : `${cli} is missing: run npm run build`);
    it.skipIf(noTrap)(
      `refuses a link-local (metadata) URL before any packet is sent: annex in a network namespace with 169.254.169.254 on the other end of its link${noTrap ? ` (skipped: ${noTrap})` : ''}`,
      async () => {
        // Only the annex inside the trap may see these metrics: the one on the host stops,
        // and with it the webhook (the admin writes these).
        await annex!.stop();
        annex = undefined;
        await k(['delete', 'mutatingwebhookconfiguration', 'annex-externalmetrics']);
        const trap: Trap = await createTrap({ 'metadata.internal.test': METADATA_ADDRESS });
        const dir = mkdtempSync(join(tmpdir(), 'annex-trapped-'));
        let child: ReturnType<Trap['spawnInside']> | undefined;
        let stderr = '';
        try {
          const apiPort = Number(new URL(c.server).port);
          const kubeconfig = parse(readFileSync(c.adminKubeconfig, 'utf8'));
          kubeconfig.clusters[0].cluster.server = `https://127.0.0.1:${await trap.forward(apiPort)}`;
          writeFileSync(join(dir, 'kubeconfig'), stringify(kubeconfig));
          writeFileSync(
            join(dir, 'annex.yaml'),
            stringify({
              server: { host: '127.0.0.1', port: 0 },
              tls: { dir: join(dir, 'certs') },
              kube: { kubeconfig: join(dir, 'kubeconfig') },
              metrics: { enabled: false },
              admission: { names: { enabled: false }, defaults: { enabled: false } },
              scaling: {
                enabled: true,
                // The name is listed, and so is the peer's address: neither opens the metadata address.
                allow: {
                  urls: [],
                  hosts: ['metadata.internal.test'],
                  cidrs: [`${PEER_ADDRESS}/32`],
                },
              },
              log: { level: 'info' },
            }),
          );
          child = trap.spawnInside(process.execPath, [cli, 'serve', '-c', join(dir, 'annex.yaml')]);
          child.stderr!.on('data', (d) => (stderr += d));
          child.stdout!.on('data', (d) => (stderr += d));
          await create(
            'admin',
            em('imds', {
              json: { url: `http://${METADATA_ADDRESS}/latest/meta-data`, path: '$.v' },
            }),
            em('imds-by-name', {
              json: { url: 'http://metadata.internal.test/latest/meta-data', path: '$.v' },
            }),
            em('imds-mapped', {
              json: { url: `http://[::ffff:${METADATA_ADDRESS}]/latest/meta-data`, path: '$.v' },
            }),
            em('imds-redirect', { json: { url: REDIRECT_URL, path: '$.v' } }),
          );
          const refused = {
            imds: `GET http://${METADATA_ADDRESS}/latest/meta-data: refused: ${METADATA_ADDRESS} is link-local (cloud metadata: 169.254.169.254), refused unless annex's scaling.allow names this address`,
            'imds-by-name': `GET http://metadata.internal.test/latest/meta-data: refused: metadata.internal.test resolves to ${METADATA_ADDRESS}, which is link-local (cloud metadata: 169.254.169.254), refused unless annex's scaling.allow names this address`,
            'imds-mapped': `GET http://[::ffff:a9fe:a9fe]/latest/meta-data: refused: ::ffff:a9fe:a9fe is link-local (cloud metadata: 169.254.169.254), refused unless annex's scaling.allow names this address`,
          };
          for (const [name, message] of Object.entries(refused)) {
            expect(availableOf(await settled(name, 'SourceRefused', 60_000)).message).toBe(message);
          }
          expect(availableOf(await settled('imds-redirect', 'FetchFailed')).message).toBe(
            `GET ${REDIRECT_URL}: HTTP 302 (redirects are not followed)`,
          );
          // Three more rounds of reads (each reaches the redirecting peer once): still nothing.
          const rounds = (trap.connections.redirect ?? 0) + 3;
          await eventually(
            async () => ((trap.connections.redirect ?? 0) >= rounds ? true : undefined),
            30_000,
          );
          expect(trap.connections.metadata ?? 0).toBe(0);
          expect(trap.linkLocalPackets()).toBe(0);
          // The trap catches what it should: the same GET from annex's namespace, not by annex.
          const probe = trap.spawnInside(process.execPath, [
            '-e',
            `require('node:http').get('http://${METADATA_ADDRESS}/', (r) => r.pipe(process.stdout))`,
          ]);
          let answer = '';
          probe.stdout!.on('data', (d) => (answer += d));
          await new Promise((r) => probe.once('exit', r));
          expect(answer).toBe('{"v": 42}');
          expect(trap.linkLocalPackets()).toBeGreaterThan(0);
          await eventually(
            async () => (trap.connections.metadata === 1 ? true : undefined),
            10_000,
          );
        } catch (e) {
          console.error(`--- annex in ${trap.ns}:\n${stderr}`);
          throw e;
        } finally {
          child?.kill('SIGKILL');
          await trap.close();
          rmSync(dir, { recursive: true, force: true });
        }
      },
      120_000,
    );
  },
);
