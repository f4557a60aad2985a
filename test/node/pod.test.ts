// A real Pod on a real kubelet (issue 22, first steps): containerd + kubelet + the control
// plane in namespaces the test creates (test/cluster/node.ts); the workload image is built
// offline (devcluster/build-node-images.sh) and imported. Part of `npm test` (the `node`
// project, whose ./global-setup.ts builds or reuses the node); alone: `npm run test:node`.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NODE_NAME, startNode, type Node } from '../cluster/node.js';
import { helloPodSpec } from './kube.js';

const why = inject('nodeSkipReason');

(why ? describe.skip : describe)(`a real node${why ? ` (skipped: ${why})` : ''}`, () => {
  let node: Node;
  const kubectl = (args: string[], input?: string) =>
    spawnSync(node.cluster.kubectl, ['--kubeconfig', node.cluster.adminKubeconfig, ...args], {
      encoding: 'utf8',
      input,
      timeout: 120_000,
    });
  const ok = (args: string[], input?: string) => {
    const r = kubectl(args, input);
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  /** A Pod of the hello image, hardened as the restricted profile wants, probed on /healthz. */
  const helloPod = (namespace: string, name: string, labels: Record<string, string> = {}) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels },
    spec: helloPodSpec('hello'),
  });
  /** GET from the node's namespace (no packet leaves it); '' on any failure. */
  const fetchInNode = (url: string) =>
    node.exec(process.execPath, [
      '-e',
      `fetch('${url}', { signal: AbortSignal.timeout(8000) }).then(async r => process.stdout.write(r.status + ' ' + await r.text()), () => {})`,
    ]).stdout;
  /** A namespace, once its `default` ServiceAccount exists (serviceaccount-controller). */
  const namespace = async (ns: string) => {
    ok(['create', 'namespace', ns]);
    for (let i = 0; i < 60 && kubectl(['get', 'sa', 'default', '-n', ns]).status !== 0; i++)
      await new Promise((r) => setTimeout(r, 250));
  };

  beforeAll(async () => {
    node = await startNode((l) => console.error(`node: ${l}`));
  });
  afterAll(async () => {
    if (!node) return;
    await node.stop();
    expect(node.leftovers()).toEqual([]);
  });

  it('registers Ready, with the node identity and the namespace address', () => {
    const n = JSON.parse(ok(['get', 'node', NODE_NAME, '-o', 'json']));
    const ready = n.status.conditions.find((c: { type: string }) => c.type === 'Ready');
    expect(ready.status).toBe('True');
    expect(n.status.addresses).toContainEqual({ type: 'InternalIP', address: '10.201.0.1' });
    console.error(
      `node: ${n.status.nodeInfo.kubeletVersion}, ${n.status.nodeInfo.containerRuntimeVersion}`,
    );
  });

  it('runs a Pod of the local image to Running and Ready (readiness probe), logs readable, a ClusterIP Service routed by kube-proxy', async () => {
    await namespace('hello');
    const pod = helloPod('hello', 'hello');
    const t0 = Date.now();
    ok(['apply', '-f', '-'], JSON.stringify(pod));
    ok(['wait', '-n', 'hello', 'pod/hello', '--for=condition=Ready', '--timeout=60s']);
    console.error(`node: pod Ready in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    const p = JSON.parse(ok(['get', '-n', 'hello', 'pod/hello', '-o', 'json']));
    expect(p.status.phase).toBe('Running');
    expect(p.status.podIP).toMatch(/^10\.88\.0\./);
    expect(p.spec.nodeName).toBe(NODE_NAME); // bound by the real kube-scheduler
    // The kubelet's probe reached /healthz; a request from the node's namespace reaches /.
    const curl = node.exec(process.execPath, [
      '-e',
      `fetch('http://${p.status.podIP}:8080/').then(r => r.text()).then(t => process.stdout.write(t))`,
    ]);
    expect(curl.stdout).toBe('hello from hello\n');
    const logs = ok(['logs', '-n', 'hello', 'hello']);
    expect(logs).toContain('hello listening on :8080');
    expect(logs).toMatch(/request GET \/ from 10\.88\.0\.1:/);
    // A ClusterIP Service routed by kube-proxy (EndpointSlice by kube-controller-manager).
    ok(['label', '-n', 'hello', 'pod/hello', 'app=hello']);
    ok(['create', 'service', 'clusterip', 'hello', '-n', 'hello', '--tcp=80:8080']);
    const ip = ok(['get', '-n', 'hello', 'service/hello', '-o', 'jsonpath={.spec.clusterIP}']);
    let viaService = '';
    const t1 = Date.now();
    while (Date.now() - t1 < 60_000) {
      viaService = node.exec(process.execPath, [
        '-e',
        `fetch('http://${ip}/', { signal: AbortSignal.timeout(2000) }).then(r => r.text()).then(t => process.stdout.write(t), () => {})`,
      ]).stdout;
      if (viaService) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    console.error(`node: service ${ip} answered in ${((Date.now() - t1) / 1000).toFixed(1)}s`);
    expect(viaService).toBe('hello from hello\n');
    ok(['delete', '-n', 'hello', 'pod/hello', '--wait=true', '--timeout=60s']);
    // The kubelet removes a deleted Pod's containers in its cleanup pass, which may come
    // after the API object is gone. CoreDNS runs on this node too: only the namespace's.
    const left = () =>
      node.crictl(['ps', '-a', '-q', '--label', 'io.kubernetes.pod.namespace=hello']).stdout.trim();
    const t2 = Date.now();
    while (left() && Date.now() - t2 < 60_000) await new Promise((r) => setTimeout(r, 500));
    expect(left()).toBe('');
  });

  it("resolves Service names through the cluster DNS (CoreDNS): `queue.shop` from another namespace's Pod, as the docs' sources name them", async () => {
    const t0 = Date.now();
    await node.dnsReady();
    console.error(`node: CoreDNS available ${((Date.now() - t0) / 1000).toFixed(1)}s after asked`);
    await namespace('shop');
    ok(['apply', '-f', '-'], JSON.stringify(helloPod('shop', 'queue', { app: 'queue' })));
    ok(['create', 'service', 'clusterip', 'queue', '-n', 'shop', '--tcp=8080:8080']);
    ok(['apply', '-f', '-'], JSON.stringify(helloPod('hello', 'client')));
    for (const pod of ['shop/queue', 'hello/client']) {
      const [ns, name] = pod.split('/') as [string, string];
      ok(['wait', '-n', ns, `pod/${name}`, '--for=condition=Ready', '--timeout=60s']);
    }
    const client = ok(['get', '-n', 'hello', 'pod/client', '-o', 'jsonpath={.status.podIP}']);
    const via = (url: string) =>
      fetchInNode(`http://${client}:8080/get?url=${encodeURIComponent(url)}`);
    // The client Pod's resolver: nameserver kube-dns, search hello.svc.cluster.local
    // svc.cluster.local cluster.local — `queue.shop` is queue.shop.svc.cluster.local.
    let answer = '';
    const t1 = Date.now();
    while (Date.now() - t1 < 60_000 && !answer.startsWith('200 ')) {
      answer = via('http://queue.shop:8080/');
      if (!answer.startsWith('200 ')) await new Promise((r) => setTimeout(r, 1000));
    }
    console.error(
      `node: queue.shop answered in ${((Date.now() - t1) / 1000).toFixed(1)}s: ${answer.trim()}`,
    );
    expect(answer).toBe('200 hello from queue\n');
    expect(via('http://queue.shop.svc.cluster.local:8080/')).toBe('200 hello from queue\n');
    // A name that is no Service fails in the Pod (502 from hello), and fast. CoreDNS
    // answers NXDOMAIN inside cluster.local; the last, absolute `nothere.shop.` has no
    // upstream in this namespace (no `forward`), so Go reports "server misbehaving"
    // where a cluster with an upstream resolver says "no such host".
    const t2 = Date.now();
    const missing = via('http://nothere.shop:8080/');
    expect(missing).toMatch(
      /^502 .*lookup nothere\.shop on 10\.0\.0\.10:53: (server misbehaving|no such host)/,
    );
    expect(Date.now() - t2).toBeLessThan(8000);
  });
});
