// The composition root: configuration in, a listening annex out. Everything the server
// needs is built here once and passed down; nothing below reads globals or env.
import { ConfigError, type Config } from '../config/load.js';
import type { Logger } from '../log.js';
import { ensureCertificates, loadServingMaterial, watchServingMaterial } from '../certs/index.js';
import { admission } from '../admission/index.js';
import { createApp } from './app.js';
import { listen, type Listening } from './listen.js';

export interface Annex {
  url: string;
  port: number;
  listening: Listening;
  close(): Promise<void>;
}

export async function startAnnex(config: Config, log: Logger): Promise<Annex> {
  const { tls } = config;
  if (tls.generate) {
    const r = await ensureCertificates({
      dir: tls.dir,
      service: tls.service,
      namespace: tls.namespace,
      dnsNames: tls.dnsNames,
      ipAddresses: tls.ipAddresses,
    });
    if (r.issuedCa || r.issuedLeaf) {
      log.info(
        { dir: tls.dir, issuedCa: r.issuedCa, issuedLeaf: r.issuedLeaf },
        'generated certificates',
      );
    }
  }
  let material;
  try {
    material = await loadServingMaterial(tls.dir);
  } catch (e) {
    throw new ConfigError(`cannot load TLS material: ${(e as Error).message}`);
  }

  const app = createApp({
    log,
    isReady: () => true,
    features: [admission(config.admission, log)],
  });
  let listening: Listening;
  try {
    listening = await listen(app, { ...config.server, tls: material });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'EADDRINUSE' || err.code === 'EACCES' || err.code === 'EADDRNOTAVAIL') {
      throw new ConfigError(
        `cannot listen on ${config.server.host}:${config.server.port}: ${err.code} (set --port or server.port)`,
      );
    }
    throw e;
  }
  const stopWatching = watchServingMaterial(
    tls.dir,
    (m) => {
      listening.updateTls(m);
      log.info({ dir: tls.dir }, 'reloaded serving certificate');
    },
    (err) =>
      log.error(
        { dir: tls.dir, error: err.message },
        'ignored invalid certificate update; still serving the previous one',
      ),
  );
  log.info({ url: listening.url }, 'annex is serving');
  return {
    url: listening.url,
    port: listening.port,
    listening,
    close: async () => {
      stopWatching();
      await listening.close();
    },
  };
}
