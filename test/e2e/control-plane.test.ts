// The seed chapter's first scenes, replayed against the real control plane: proof that
// what the other tests talk to is a real kube-apiserver with RBAC and validation.
import { beforeAll, expect, it } from 'vitest';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
} from '../cluster/harness.js';

describeCluster('a real kube-apiserver + etcd', (c) => {
  let ns: string;
  beforeAll(async () => {
    ns = await createNamespace('ch34');
  });

  it('reports the pinned version to the matching kubectl', async () => {
    const out = JSON.parse(await kubectlOk(['version', '-o', 'json']));
    expect(out.serverVersion.gitVersion).toBe(`v${c.version}`);
    expect(out.clientVersion.gitVersion).toBe(`v${c.version}`);
  });

  it('creates a ConfigMap, and a second create is 409 AlreadyExists', async () => {
    await kubectlOk(['-n', ns, 'create', 'configmap', 'reglages', '--from-literal=couleur=bleu']);
    const again = await kubectl([
      '-n',
      ns,
      'create',
      'configmap',
      'reglages',
      '--from-literal=couleur=bleu',
    ]);
    expect(again.code).not.toBe(0);
    expect(again.stderr.trim()).toBe(
      'error: failed to create configmap: configmaps "reglages" already exists',
    );

    const raw = await apiRequest('POST', `/api/v1/namespaces/${ns}/configmaps`, {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'reglages' },
        data: { couleur: 'bleu' },
      },
    });
    expect(raw.status).toBe(409);
    expect(raw.json()).toMatchObject({
      kind: 'Status',
      code: 409,
      reason: 'AlreadyExists',
      message: 'configmaps "reglages" already exists',
    });
  });

  it("rejects an invalid name with Kubernetes' own 422 message", async () => {
    const r = await kubectl(['-n', ns, 'create', 'configmap', 'Reglages_1', '--from-literal=a=b']);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(
      `error: failed to create configmap: ConfigMap "Reglages_1" is invalid: metadata.name: Invalid value: "Reglages_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    );
  });

  it('forbids an unprivileged user with 403 and names user, verb, resource and namespace', async () => {
    const r = await kubectl(['-n', ns, 'get', 'configmaps'], { as: 'user' });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `Error from server (Forbidden): configmaps is forbidden: User "jane" cannot list resource "configmaps" in API group "" in the namespace "${ns}"`,
    );
    const raw = await apiRequest('GET', `/api/v1/namespaces/${ns}/configmaps`, { as: 'user' });
    expect(raw.status).toBe(403);
    expect(raw.json().reason).toBe('Forbidden');
  });

  it('refuses a PUT with a stale resourceVersion: 409 Conflict', async () => {
    const cm = JSON.parse(
      await kubectlOk(['-n', ns, 'get', 'configmap', 'reglages', '-o', 'json']),
    );
    await kubectlOk([
      '-n',
      ns,
      'patch',
      'configmap',
      'reglages',
      '--type=merge',
      '-p',
      '{"data":{"couleur":"vert"}}',
    ]);
    const raw = await apiRequest('PUT', `/api/v1/namespaces/${ns}/configmaps/reglages`, {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'reglages', resourceVersion: cm.metadata.resourceVersion },
        data: { couleur: 'rouge' },
      },
    });
    expect(raw.status).toBe(409);
    expect(raw.json()).toMatchObject({
      reason: 'Conflict',
      message:
        'Operation cannot be fulfilled on configmaps "reglages": the object has been modified; please apply your changes to the latest version and try again',
    });
  });

  it('publishes the front-proxy settings extension API servers read', async () => {
    const cm = JSON.parse(
      await kubectlOk([
        '-n',
        'kube-system',
        'get',
        'configmap',
        'extension-apiserver-authentication',
        '-o',
        'json',
      ]),
    );
    expect(JSON.parse(cm.data['requestheader-allowed-names'])).toEqual(['front-proxy-client']);
    expect(cm.data['requestheader-client-ca-file']).toContain('BEGIN CERTIFICATE');
    expect(cm.data['client-ca-file']).toContain('BEGIN CERTIFICATE');
  });
});
