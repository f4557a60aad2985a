// Child process for bench/webhook-cpu.mjs. `bare`: node:https doing exactly the parse,
// decide and stringify of the two bench rules (validate: metadata.name is a DNS-1123
// label; mutate: add a label and default container requests, the JSON Patch built by
// hand). `annex`: annex from dist/ with its built-in names and defaults webhooks and a
// user feature implementing the same two rules through the public API. Prints its port.
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [kind, certsDir, dist = new URL('../dist', import.meta.url).pathname] = process.argv.slice(2);
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MUTATED = 'bench.annex.dev/mutated';
const REQUESTS = { cpu: '100m', memory: '128Mi' };

function bareAnswer(path, review) {
  const { uid, object } = review.request;
  const response = { uid, allowed: true };
  if (path === '/validate') {
    const name = object.metadata.name;
    if (typeof name !== 'string' || name.length > 63 || !LABEL.test(name)) {
      response.allowed = false;
      response.status = { code: 422, message: `metadata.name: Invalid value: "${name}"` };
    }
  } else {
    const ops = [];
    if (object.metadata.labels) {
      ops.push({
        op: 'add',
        path: `/metadata/labels/${MUTATED.replace('/', '~1')}`,
        value: 'true',
      });
    } else ops.push({ op: 'add', path: '/metadata/labels', value: { [MUTATED]: 'true' } });
    object.spec.template.spec.containers.forEach((c, i) => {
      if (c.resources?.requests) return;
      const base = `/spec/template/spec/containers/${i}/resources`;
      if (c.resources) ops.push({ op: 'add', path: `${base}/requests`, value: REQUESTS });
      else ops.push({ op: 'add', path: base, value: { requests: REQUESTS } });
    });
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(ops)).toString('base64');
  }
  return JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response });
}

let port;
const cert = readFileSync(join(certsDir, 'tls.crt'));
const key = readFileSync(join(certsDir, 'tls.key'));
if (kind === 'bare') {
  const server = createServer({ cert, key, keepAliveTimeout: 100_000 }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = bareAnswer(req.url, JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  port = server.address().port;
} else {
  const annexApi = await import(join(dist, 'index.js'));
  const { allow, denyInvalid, invalidField, mutate, validateName } = annexApi;
  const { mutatingWebhook, validatingWebhook, defineFeature, loadConfig, startAnnex } = annexApi;
  const match = { kinds: ['apps/Deployment'], operations: ['CREATE'] };
  const feature = defineFeature({
    name: 'bench',
    webhooks: [
      validatingWebhook({
        name: 'bench.annex.dev',
        match,
        admit(req) {
          const name = req.object?.metadata?.name ?? '';
          const errs = validateName('dns1123-label', name);
          return errs.length
            ? denyInvalid(req, [invalidField('metadata.name', name, errs.join('; '))])
            : allow();
        },
      }),
      mutatingWebhook({
        name: 'bench.annex.dev',
        match,
        admit(req) {
          const obj = req.object;
          obj.metadata.labels = { ...obj.metadata.labels, [MUTATED]: 'true' };
          for (const c of obj.spec.template.spec.containers) {
            if (!c.resources?.requests) c.resources = { ...c.resources, requests: { ...REQUESTS } };
          }
          return mutate(obj);
        },
      }),
    ],
  });
  const config = loadConfig({
    overrides: {
      server: { host: '127.0.0.1', port: 0 },
      tls: { dir: certsDir, generate: false },
      metrics: { enabled: false },
      log: { level: 'info' },
    },
  });
  // The default logger (stderr, which the parent reads and discards like a container runtime).
  const annex = await startAnnex(config, annexApi.createLogger('info'), [feature]);
  port = annex.port;
}
process.stdout.write(`${port}\n`);
// Exit (not die) on SIGINT, so that --cpu-prof writes its profile.
process.on('SIGINT', () => process.exit(0));
