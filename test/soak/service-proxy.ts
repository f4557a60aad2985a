// A stand-in for a Service with two endpoints, as kube-proxy gives one: each new TCP
// connection goes to the first backend whose readiness probe (GET /readyz, every
// periodMs, as the kubelet probes and the EndpointSlice controller publishes) last
// passed; established connections are left alone, as conntrack leaves them. The
// kube-apiserver reaches annex through it in the shutdown-under-load test.
import net from 'node:net';

export interface Backend {
  port: number;
  readyz(): Promise<number>;
}

export async function serviceProxy(backends: Backend[], periodMs: number) {
  const ready = backends.map(() => true);
  let chosen = 0;
  const dialled = backends.map(() => 0);
  const sockets = new Set<net.Socket>();
  // 503 takes a backend out at once; no answer (0) only three probes running.
  const silent = backends.map(() => 0);
  const probe = setInterval(() => {
    backends.forEach(
      (b, i) =>
        void b.readyz().then((s) => {
          silent[i] = s === 0 ? silent[i]! + 1 : 0;
          if (s === 200) ready[i] = true;
          else if (s !== 0 || silent[i]! >= 3) ready[i] = false;
        }),
    );
  }, periodMs);
  const server = net.createServer((client) => {
    // None ready (missed probes on a loaded machine): the last choice stands.
    const first = ready.indexOf(true);
    if (first >= 0) chosen = first;
    const i = chosen;
    dialled[i]!++;
    const upstream = net.connect(backends[i]!.port, '127.0.0.1');
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(a);
      a.pipe(b);
      a.on('error', () => b.destroy());
      // A clean end was passed on by pipe (written bytes first); a reset is passed on as one.
      a.on('close', (hadError) => {
        sockets.delete(a);
        if (hadError) b.destroy();
        else b.end();
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    /** New connections sent to each backend so far. */
    dialled,
    close: async () => {
      clearInterval(probe);
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
