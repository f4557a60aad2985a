#!/usr/bin/env node
// annex's command line: one file per command under src/cli/, registered here.
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/load.js';
import { UserError } from './errors.js';
import { register as serve } from './serve.js';
import { register as certs } from './certs.js';
import { register as defaults } from './defaults.js';
import { register as demo } from './demo.js';
import { register as manifests } from './manifests.js';
import { register as check } from './check.js';

const program = new Command('annex')
  .description('Extend a Kubernetes API server: aggregated API + admission webhooks')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

for (const register of [serve, certs, defaults, demo, manifests, check]) register(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  if (err instanceof UserError || err instanceof ConfigError) {
    console.error(`annex: ${err.message}`);
    process.exit(err instanceof UserError ? err.exitCode : 1);
  }
  throw err;
}
