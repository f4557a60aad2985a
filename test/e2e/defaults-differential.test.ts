// "9 lines become 64": `annex defaults` predicts, offline, what the real API server's
// `kubectl apply --dry-run=server -o yaml` prints for the seed's bare Pod.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { createNamespace, describeCluster, kubectlOk } from '../cluster/harness.js';

const fixture = join(import.meta.dirname, '..', 'fixtures', 'pod-nu.yaml');
const cli = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');

/** The server's random and clock values, by shape, as the placeholders annex prints. */
function placeholders(yaml: string): string {
  return yaml
    .replace(/kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}/g, 'kube-api-access-<random>')
    .replace(
      /uid: [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/gm,
      'uid: <allocated>',
    )
    .replace(/creationTimestamp: "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"$/gm, 'creationTimestamp: <now>');
}

describeCluster('annex defaults vs the real --dry-run=server', () => {
  it("prints the seed's bare Pod exactly as the API server returns it", async () => {
    const ns = await createNamespace('ch34');
    const server = await kubectlOk([
      '-n',
      ns,
      'apply',
      '-f',
      fixture,
      '--dry-run=server',
      '-o',
      'yaml',
    ]);
    const { stdout: annex } = await promisify(execFile)(process.execPath, [
      cli,
      'defaults',
      fixture,
      '-n',
      ns,
    ]);
    expect(annex).toBe(placeholders(server));
    expect(server.trimEnd().split('\n')).toHaveLength(64);
  });
});
