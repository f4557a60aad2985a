// A real Pod on a real kubelet (issue 22, first steps): containerd + kubelet + the control
// plane in namespaces the test creates (test/cluster/node.ts); the workload image is built
// offline (devcluster/build-node-images.sh) and imported. Part of `npm test` (the `node`
// project, whose ./global-setup.ts builds or reuses the node); alone: `npm run test:node`.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HELLO_IMAGE, NODE_NAME, startNode, type Node } from '../cluster/node.js';

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
    ok(['create', 'namespace', 'hello']);
    // kube-controller-manager's serviceaccount-controller makes `default`.
    for (let i = 0; i < 60 && kubectl(['get', 'sa', 'default', '-n', 'hello']).status !== 0; i++)
      await new Promise((r) => setTimeout(r, 250));
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'hello', namespace: 'hello' },
      spec: {
        terminationGracePeriodSeconds: 5,
        containers: [
          {
            name: 'hello',
            image: HELLO_IMAGE,
            imagePullPolicy: 'Never',
            ports: [{ containerPort: 8080 }],
            readinessProbe: {
              httpGet: { path: '/healthz', port: 8080 },
              periodSeconds: 1,
            },
            securityContext: {
              runAsNonRoot: true,
              readOnlyRootFilesystem: true,
              allowPrivilegeEscalation: false,
              capabilities: { drop: ['ALL'] },
            },
          },
        ],
      },
    };
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
    expect(node.crictl(['ps', '-a', '-q']).stdout.trim()).toBe('');
  });
});
