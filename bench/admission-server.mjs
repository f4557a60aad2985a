// Child process for bench/admission-memory.bench.mjs: runs either annex (from dist/) or a bare
// node:https server doing only the JSON parse + stringify of an AdmissionReview, and
// reports its own CPU time (and RSS) on request, so the parent measures the server alone.
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [kind, certsDir] = process.argv.slice(2);
const cert = readFileSync(join(certsDir, 'tls.crt'));
const key = readFileSync(join(certsDir, 'tls.key'));
let port;

if (kind === 'bare') {
  const server = createServer({ cert, key, keepAliveTimeout: 100_000 }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const body = JSON.stringify({
        apiVersion: review.apiVersion,
        kind: 'AdmissionReview',
        response: { uid: review.request.uid, allowed: true },
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  port = server.address().port;
} else {
  const { loadConfig } = await import('../dist/config/load.js');
  const { createLogger } = await import('../dist/log.js');
  const { startAnnex } = await import('../dist/server/start.js');
  const config = loadConfig({
    overrides: {
      server: { host: '127.0.0.1', port: 0 },
      tls: { dir: certsDir, generate: false },
      metrics: { enabled: false },
      log: { level: 'info' },
    },
  });
  // One JSON log line per review is part of annex's real cost: keep it, send it nowhere.
  const { createWriteStream } = await import('node:fs');
  const annex = await startAnnex(config, createLogger('info', createWriteStream('/dev/null')));
  port = annex.port;
}

// Peak RSS between two 'rss' questions, sampled every 10 ms (bench/admission-memory.bench.mjs).
let peakRss = process.memoryUsage.rss();
setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 10).unref();

process.on('message', (m) => {
  if (m === 'cpu') {
    const u = process.cpuUsage();
    process.send({ cpuMicros: u.user + u.system });
  } else if (m === 'rss') {
    const rss = process.memoryUsage.rss();
    process.send({ rss, peakRss: Math.max(peakRss, rss) });
    peakRss = rss;
  }
});
process.send({ port });
