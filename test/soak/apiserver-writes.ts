// Webhook traffic as the kube-apiserver sends it: dry-run Deployment creates through the
// real API server at a fixed rate, each of which calls annex's mutating (defaults) and
// validating (names) webhooks with failurePolicy Fail. A create that comes back 201 with
// annex's managed-by label went through both; anything else is a failed request.
import { Agent, request } from 'node:https';
import type { ClusterInfo } from '../cluster/control-plane.js';
import { adminIdentity } from './aggregated.js';

export function dryRunCreates(c: ClusterInfo, namespace: string, rate: number) {
  const id = adminIdentity(c);
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const figures = { sent: 0, ok: 0, failed: 0, failures: {} as Record<string, number> };
  const fail = (text: string) => {
    figures.failed++;
    const k = text.replace(/\d+/g, 'N').slice(0, 700);
    figures.failures[k] = (figures.failures[k] ?? 0) + 1;
  };
  const body = JSON.stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace },
    spec: {
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
      },
    },
  });
  const one = () =>
    new Promise<void>((resolve) => {
      figures.sent++;
      const req = request(
        `${c.server}/apis/apps/v1/namespaces/${namespace}/deployments?dryRun=All`,
        {
          ...id,
          agent,
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          timeout: 15_000,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d) => (text += d));
          res.on('end', () => {
            if (res.statusCode !== 201) fail(`${res.statusCode}: ${text.slice(0, 600)}`);
            else if (
              JSON.parse(text).metadata?.labels?.['app.kubernetes.io/managed-by'] !== 'annex'
            )
              fail('created without the defaults webhook');
            else figures.ok++;
            resolve();
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('no answer in 15 s')));
      req.on('error', (e) => {
        fail(e.message);
        resolve();
      });
      req.end(body);
    });
  const pending = new Set<Promise<void>>();
  const timer = setInterval(() => {
    const p = one().finally(() => pending.delete(p));
    pending.add(p);
  }, 1000 / rate);
  return {
    figures,
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      agent.destroy();
      return figures;
    },
  };
}
