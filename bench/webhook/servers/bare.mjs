// Reference A, the limit: node:https doing what any webhook must (read the body, JSON.parse,
// decide, JSON.stringify) for the two bench rules, and nothing else — written as one would
// for production, not slowed down: no framework, no logging, no deadline plumbing.
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DEFAULT_REQUESTS = { cpu: '100m', memory: '128Mi' };

function validate(request) {
  const name = request.object?.metadata?.name;
  if (typeof name === 'string' && name.length <= 63 && DNS1123_LABEL.test(name)) {
    return { uid: request.uid, allowed: true };
  }
  const message = `metadata.name: Invalid value: ${JSON.stringify(name)}: must be a DNS-1123 label`;
  return { uid: request.uid, allowed: false, status: { code: 422, reason: 'Invalid', message } };
}

function mutate(request) {
  const object = request.object ?? {};
  const patch = object.metadata?.labels
    ? [{ op: 'add', path: '/metadata/labels/bench.annex.dev~1mutated', value: 'true' }]
    : [{ op: 'add', path: '/metadata/labels', value: { 'bench.annex.dev/mutated': 'true' } }];
  const containers = object.spec?.template?.spec?.containers ?? [];
  containers.forEach((c, i) => {
    if (c.resources?.requests) return;
    const at = `/spec/template/spec/containers/${i}/resources`;
    patch.push(
      c.resources
        ? { op: 'add', path: `${at}/requests`, value: DEFAULT_REQUESTS }
        : { op: 'add', path: at, value: { requests: DEFAULT_REQUESTS } },
    );
  });
  return {
    uid: request.uid,
    allowed: true,
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
  };
}

const handlers = { '/validate': validate, '/mutate': mutate };

const server = createServer(
  { cert: readFileSync(process.env.BENCH_CERT), key: readFileSync(process.env.BENCH_KEY) },
  (req, res) => {
    const handler = handlers[req.url.split('?')[0]];
    if (req.method !== 'POST' || !handler) {
      res.writeHead(404).end();
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let body;
      try {
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        body = JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: handler(review.request),
        });
      } catch {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('malformed AdmissionReview');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
  },
);
// Above the API server's 90 s idle timeout, as production webhooks must be.
server.keepAliveTimeout = 100_000;
server.headersTimeout = 101_000;
server.listen(Number(process.env.BENCH_PORT), '127.0.0.1', () => console.log('ready'));
