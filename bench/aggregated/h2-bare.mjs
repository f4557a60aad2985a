// The bare reference for aggregated GETs over HTTP/2 (bench/aggregated/h2-direct.mjs):
// node:http2's core API answering the very objects annex answered (BENCH_OBJECTS: a JSON
// file { path: object }) by path, and nothing else. Each answer is encoded once, at start:
// annex also keeps every object's JSON as bytes (src/apiserver/encoded.ts), so the floor
// to compare with is writing the same bytes over h2, not serialising them per request.
// Prints `ready` once listening.
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';

const objects = JSON.parse(readFileSync(process.env.BENCH_OBJECTS, 'utf8'));
const answers = new Map(
  Object.entries(objects).map(([path, o]) => [path, Buffer.from(JSON.stringify(o))]),
);
const server = http2.createSecureServer({
  cert: readFileSync(process.env.BENCH_CERT),
  key: readFileSync(process.env.BENCH_KEY),
});
server.on('stream', (stream, headers) => {
  const body = answers.get(headers[':path']);
  if (!body) return stream.respond({ ':status': 404 }, { endStream: true });
  stream.respond({
    ':status': 200,
    'content-type': 'application/json',
    'content-length': body.length,
  });
  stream.end(body);
});
server.listen(Number(process.env.BENCH_PORT), '127.0.0.1', () => console.log('ready'));
