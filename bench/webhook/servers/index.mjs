// The webhook servers under test (bench/webhook/run.mjs starts each as its own process,
// pinned to the server core). An entry:
//   label     what the report calls it
//   paths     { validate, mutate } it serves the two bench rules at
//   ready     'stdout' (prints the line `ready`) or a path answering 200 when ready
//   prepare   optional async (ctx) => { command, args, env? } | { skip: why } — builds it
//   command, args, env   how to run it (when no prepare); env adds to BENCH_PORT,
//             BENCH_CERT, BENCH_KEY, BENCH_CA, BENCH_WORK (a scratch folder)
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const here = import.meta.dirname;
const root = join(here, '../../..');
const both = (validate, mutate) => ({ validate, mutate });

/**
 * A reference built by bench/webhook/servers/build.mjs (helper "bench-refs"): Go sources
 * under servers/<name>/ built into the cache, or Pepr installed there; its
 * `buildServer(name, { cacheDir, log })` says how to run it ({ command, args }).
 */
function built(name, label) {
  return {
    label,
    paths: both('/validate', '/mutate'),
    ready: 'stdout',
    async prepare(ctx) {
      const script = join(here, 'build.mjs');
      const source = join(here, name, name === 'pepr' ? 'server.mjs' : 'main.go');
      if (!existsSync(script) || !existsSync(source)) {
        return { skip: `not built: bench/webhook/servers/${name}/ is not on this branch` };
      }
      const { buildServer } = await import(pathToFileURL(script).href);
      const t0 = Date.now();
      const how = await buildServer(name, {
        cacheDir: ctx.cacheDir,
        log: (m) => ctx.log(`  ${m}`),
      });
      return { command: how.command, args: how.args ?? [], buildSeconds: (Date.now() - t0) / 1000 };
    },
  };
}

/**
 * annex as deployed: `annex serve` with the default configuration (info logging on, one
 * line per review, to stderr; metrics group on), only the port and certificates set.
 */
function annex(label, paths, extra = () => [], tree = root) {
  const annexCli = join(tree, 'dist/cli/main.js');
  return {
    label,
    paths,
    ready: '/readyz',
    async prepare(ctx, env) {
      const config = join(env.BENCH_WORK, 'annex.yaml');
      writeFileSync(
        config,
        [
          `server: { host: 127.0.0.1, port: ${env.BENCH_PORT}, shutdownDelaySeconds: 0 }`,
          `tls: { dir: ${JSON.stringify(ctx.certDir)}, generate: false }`,
          '',
        ].join('\n'),
      );
      return {
        command: process.execPath,
        args: [annexCli, 'serve', '--config', config, ...extra(env)],
      };
    },
  };
}

/** The demo policies (policies/) and five more, read from a folder as with no API server. */
function policyDir(env, tree = root) {
  const dir = join(env.BENCH_WORK, 'policies');
  mkdirSync(dir, { recursive: true });
  for (const from of [join(tree, 'policies'), join(tree, 'bench/webhook/servers/annex-policies')]) {
    for (const f of readdirSync(from)) if (f.endsWith('.yaml')) cpSync(join(from, f), join(dir, f));
  }
  return dir;
}

export const servers = {
  bare: {
    label: 'A: bare node:https',
    paths: both('/validate', '/mutate'),
    ready: 'stdout',
    command: process.execPath,
    args: [join(here, 'bare.mjs')],
  },
  'controller-runtime': built('controller-runtime', 'B: Go controller-runtime'),
  'go-hand': built('go-hand', 'B′: hand-written Go'),
  pepr: built('pepr', 'C: Pepr'),
  annex: annex(
    'annex (feature, public API)',
    both('/validate/bench-names.bench.annex.dev', '/mutate/bench-defaults.bench.annex.dev'),
    () => ['--load', join(here, 'annex/feature.mjs')],
  ),
  'annex-builtins': annex(
    'annex built-ins (names, defaults)',
    both('/validate/names.annex.dev', '/mutate/defaults.annex.dev'),
  ),
  'annex-policies': annex(
    'annex, 10 AdmissionPolicies',
    both('/validate/policies.annex.dev', '/mutate/policies.annex.dev'),
    (env) => ['--policies', policyDir(env)],
  ),
  ...before(process.env.BENCH_BEFORE),
};

/**
 * BENCH_BEFORE=<a built checkout of another commit>: the three annex servers once more from
 * that tree (its dist, its bench feature and policies), `<name>@before`, measured in the
 * same rounds as this tree's, so a change is judged against its before-build on the same
 * machine at the same time (ratios "vs before").
 */
function before(tree) {
  if (!tree) return {};
  const at = `(before: ${tree})`;
  // Paths as that tree serves them: its whole webhook names since 1b0480a, their first
  // label before (/validate/names).
  const feature = join(tree, 'bench/webhook/servers/annex/feature.mjs');
  const whole = readFileSync(feature, 'utf8').includes("'bench-names.bench.annex.dev'");
  const p = (first, rest) => (whole ? `${first}${rest}` : first);
  return {
    'annex@before': annex(
      `annex (feature, public API) ${at}`,
      both(
        p('/validate/bench-names', '.bench.annex.dev'),
        p('/mutate/bench-defaults', '.bench.annex.dev'),
      ),
      () => ['--load', feature],
      tree,
    ),
    'annex-builtins@before': annex(
      `annex built-ins (names, defaults) ${at}`,
      both(p('/validate/names', '.annex.dev'), p('/mutate/defaults', '.annex.dev')),
      () => [],
      tree,
    ),
    'annex-policies@before': annex(
      `annex, 10 AdmissionPolicies ${at}`,
      both(p('/validate/policies', '.annex.dev'), p('/mutate/policies', '.annex.dev')),
      (env) => ['--policies', policyDir(env, tree)],
      tree,
    ),
  };
}

/** Which answers a server must give to be measured (checked once before any load). */
export const CHECKS = {
  /** Servers that implement exactly the contract's two rules (the others run their own). */
  exact: ['bare', 'controller-runtime', 'go-hand', 'pepr', 'annex', 'annex@before'],
};
