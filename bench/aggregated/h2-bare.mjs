// The bare reference for aggregated GETs over HTTP/2 (bench/aggregated/h2-direct.mjs):
// node:http2's core API doing what any server of these objects must (route by path,
// JSON.stringify the object, answer) and nothing else. It answers the very objects annex
// answered (BENCH_OBJECTS: a JSON file { path: object }), serialised per request as annex
// serialises them. Prints `ready` once listening.
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';

const objects = new Map(Object.entries(JSON.parse(readFileSync(process.env.BENCH_OBJECTS))));
const server = http2.createSecureServer({
  cert: readFileSync(process.env.BENCH_CERT),
  key: readFileSync(process.env.BENCH_KEY),
});
server.on('stream', (stream, headers) => {
  const object = objects.get(headers[':path']);
  if (!object) return stream.respond({ ':status': 404 }, { endStream: true });
  stream.respond({ ':status': 200, 'content-type': 'application/json' });
  stream.end(JSON.stringify(object));
});
server.listen(Number(process.env.BENCH_PORT), '127.0.0.1', () => console.log('ready'));
