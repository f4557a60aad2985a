// Loopback helpers the scenarios share: a free port, and the status of one HTTPS GET.
import { request } from 'node:https';
import { createServer } from 'node:net';

export async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/** The HTTP status of GET path on a fresh connection (0 if none within 1 s). */
export const httpsStatus = (port, path, ca) =>
  new Promise((resolve) => {
    const tls = ca ? { ca, servername: 'localhost' } : { rejectUnauthorized: false };
    const req = request({ host: '127.0.0.1', port, path, agent: false, ...tls }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', () => resolve(0));
    req.setTimeout(1000, () => req.destroy());
    req.end();
  });
