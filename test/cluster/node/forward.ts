// The host reaches kube-apiserver (inside the node's namespaces) through a Unix socket:
// host 127.0.0.1:P -> socket -> namespace 127.0.0.1:P, the same port on both sides, so one
// kubeconfig serves both. Both forwarders are child processes: an in-process one deadlocked
// against the test's synchronous kubectl calls (`TLS handshake timeout`).
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** A node process piping every connection of `listen` to `connect` (net.listen/net.connect args). */
function pipeProcess(prefix: string[], listen: string, connect: string): ChildProcess {
  const [cmd, ...args] = [...prefix, process.execPath];
  return spawn(
    cmd!,
    [
      ...args,
      '-e',
      `const net = require('node:net');
       net.createServer((c) => { const u = net.connect(${connect});
         c.pipe(u).pipe(c); c.on('error', () => u.destroy()); u.on('error', () => c.destroy()); })
         .listen(${listen}, () => console.log('listening'));`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
}

function listening(c: ChildProcess, what: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    createInterface({ input: c.stdout! }).on('line', (l) => l === 'listening' && resolve());
    c.once('exit', (code) => reject(new Error(`${what} exited (${code})`)));
  });
}

/**
 * `nsenter` is the prefix that enters the node's namespaces. Returns both forwarders once
 * they listen (the caller stops them); kills both if either fails.
 */
export async function forwardApiServer(
  nsenter: string[],
  socket: string,
  port: number,
): Promise<{ inside: ChildProcess; host: ChildProcess }> {
  const inside = pipeProcess(nsenter, JSON.stringify(socket), `${port}, '127.0.0.1'`);
  let host: ChildProcess | undefined;
  try {
    await listening(inside, 'api forward (inside)');
    host = pipeProcess([], `${port}, '127.0.0.1'`, JSON.stringify(socket));
    await listening(host, 'api forward (host)');
  } catch (e) {
    inside.kill('SIGKILL');
    host?.kill('SIGKILL');
    throw e;
  }
  return { inside, host };
}
