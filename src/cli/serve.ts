// `annex serve`: load the configuration, make sure certificates exist, start the server.
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig, type ConfigOverrides } from '../config/load.js';
import { createLogger } from '../log.js';
import { startAnnex } from '../server/start.js';

export function register(program: Command): void {
  program
    .command('serve')
    .description('run the annex HTTPS server (aggregated API + admission webhooks)')
    .option('-c, --config <file>', 'YAML configuration file')
    .option('--host <address>', 'address to listen on')
    .option('--port <port>', 'port to listen on', (v) => parsePort(v))
    .option('--certs <dir>', 'folder with ca.crt, tls.crt, tls.key')
    .option('--kubeconfig <file>', 'kubeconfig for the API server annex extends')
    .option('--load <module...>', "modules of the user's own features (see README: Build your own)")
    .option('--context <name>', 'kubeconfig context to use (default: its current-context)')
    .option(
      '--policies [dir]',
      'serve AdmissionPolicies (policy.enabled); without an API server, read from dir (default policy.directory)',
    )
    .action(
      async (o: {
        config?: string;
        host?: string;
        port?: number;
        certs?: string;
        kubeconfig?: string;
        load?: string[];
        context?: string;
        policies?: string | boolean;
      }) => {
        const overrides: ConfigOverrides = {
          server: { ...(o.host ? { host: o.host } : {}), ...(o.port ? { port: o.port } : {}) },
          tls: o.certs ? { dir: o.certs } : {},
          kube: {
            ...(o.kubeconfig ? { kubeconfig: o.kubeconfig } : {}),
            ...(o.context ? { context: o.context } : {}),
          },
          ...(o.policies
            ? {
                policy: {
                  enabled: true,
                  ...(typeof o.policies === 'string' ? { directory: o.policies } : {}),
                },
              }
            : {}),
        };
        const config = loadConfig({ file: o.config, overrides });
        config.features.push(...(o.load ?? []));
        const log = createLogger(config.log.level);
        // Handlers first: until a process listens for SIGINT the kernel's default ends it, so a
        // Ctrl-C that lands just after "annex is serving" would kill it without a drain.
        // A signal during start-up drains once start-up is done.
        const started = startAnnex(config, log);
        let stopping = false;
        const stop = (signal: NodeJS.Signals) => {
          if (stopping) {
            log.warn({ signal }, 'second signal: exiting without draining');
            process.exit(1);
          }
          stopping = true;
          log.info({ signal }, 'received signal');
          started
            .then((annex) => annex.shutdown())
            .then(
              () => {
                log.info('shut down');
                process.exit(0);
              },
              (e: Error) => {
                log.error({ error: e.message }, 'shutdown failed');
                process.exit(1);
              },
            );
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
        await started;
      },
    );
}

export function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    throw new InvalidArgumentError('must be an integer between 1 and 65535.');
  }
  return n;
}
