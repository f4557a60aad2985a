// `annex migrate CRD`: move every stored object of a CRD to its current storage version
// and trim status.storedVersions (src/kube/storage-migration.ts). Why not the built-in
// StorageVersionMigration API: see docs/architecture.md ("Storage-version migration").
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { KubeClient } from '../kube/client.js';
import { isKubeError } from '../kube/errors.js';
import { defaultCredentials } from '../kube/kubeconfig.js';
import { migrateStorage, MigrationError, type MigrateResult } from '../kube/storage-migration.js';
import type { Io } from './certs.js';
import { UserError } from '../errors.js';

export interface MigrateFlags {
  kubeconfig?: string;
  context?: string;
  timeout?: number;
  pageSize?: number;
}

export function register(program: Command): void {
  program
    .command('migrate')
    .description(
      "rewrite every stored object of a CRD in its storage version, then trim the CRD's status.storedVersions",
    )
    .argument('<crd>', 'CustomResourceDefinition name, e.g. crontabs.example.com')
    .option('--kubeconfig <file>', 'kubeconfig of the target cluster (default: as kubectl)')
    .option('--context <name>', 'kubeconfig context to use (default: its current-context)')
    .option(
      '--timeout <seconds>',
      'give up on a silent API server after this many seconds',
      positive('--timeout', Number.isFinite, 'a number of seconds > 0'),
      10,
    )
    .option(
      '--page-size <n>',
      'objects per list page',
      positive('--page-size', Number.isInteger, 'a whole number > 0'),
      500,
    )
    .action(async (crd: string, o: MigrateFlags) => {
      await migrate(crd, o, {
        out: (t) => process.stdout.write(`${t}\n`),
        err: (t) => process.stderr.write(`${t}\n`),
      });
    });
}

export async function migrate(crd: string, o: MigrateFlags, io: Io): Promise<MigrateResult> {
  if (o.kubeconfig && !existsSync(o.kubeconfig))
    throw new UserError(`--kubeconfig ${o.kubeconfig}: file not found`);
  try {
    const creds = defaultCredentials({ kubeconfig: o.kubeconfig, context: o.context });
    const kube = new KubeClient(creds, { timeoutMs: (o.timeout ?? 10) * 1000 });
    try {
      return await migrateStorage(kube, crd, {
        pageSize: o.pageSize ?? 500,
        progress: (line) => io.out(line),
      });
    } finally {
      kube.close();
    }
  } catch (e) {
    if (isKubeError(e) || e instanceof MigrationError) throw new UserError(e.message);
    throw e;
  }
}

function positive(flag: string, ok: (n: number) => boolean, what: string) {
  return (v: string) => {
    const n = Number(v);
    if (!(n > 0) || !ok(n)) throw new UserError(`${flag} must be ${what}, got "${v}"`);
    return n;
  };
}
