#!/usr/bin/env node
// annex's command line: one file per command under src/cli/, registered here.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { UserError } from '../errors.js';
import { isKubeError } from '../kube/errors.js';
import { register as serve } from './serve.js';
import { register as certs } from './certs.js';
import { register as admissionClient } from './admission-client.js';
import { register as defaults } from './defaults.js';
import { register as demo } from './demo.js';
import { register as manifests } from './manifests.js';
import { register as check } from './check.js';
import { register as migrate } from './migrate.js';
import { register as policy } from './policy.js';
import { register as install } from './install.js';
import { register as policyTests } from './policy-tests.js';

// The package's own package.json: two levels up from src/cli/ and from dist/cli/ alike.
const { version } = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
) as { version: string };

const program = new Command('annex')
  .description('Extend a Kubernetes API server: aggregated API + admission webhooks')
  .version(version, '-V, --version', 'print the annex version')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

for (const register of [
  serve,
  certs,
  admissionClient, // a subcommand of certs
  defaults,
  demo,
  manifests,
  check,
  migrate,
  policy,
  install,
  policyTests,
])
  register(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  // A kubeconfig annex cannot use, an API server that is not there or says no: one line.
  if (err instanceof UserError || isKubeError(err)) {
    console.error(`annex: ${(err as Error).message}`);
    process.exit(err instanceof UserError ? err.exitCode : 1);
  }
  throw err;
}
