// Where the console blocks of the docs run: a scene is a shell environment on the test
// control plane — `kubectl` with a kubeconfig of the scene's own namespace, `annex` and
// `npx annex` the built CLI, the files a page refers to in the working directory — and,
// for most, annex started the way the page says.
import { spawn } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type ConfigOverrides } from '../../src/config/load.js';
import { declarationsOf, renderObjects, serviceRefOf } from '../../src/manifests/render.js';
import type { Feature } from '../../src/server/feature.js';
import { POLICY_LABEL } from '../../src/policy/cel/index.js';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  installPolicyCrd,
  pointAtTestAnnex,
  repoManifest,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { cli } from '../cluster/cli.js';
import {
  cluster,
  createNamespace,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';

const repo = join(import.meta.dirname, '..', '..');

export interface Scene {
  /** Runs one `$` line in bash; stdout and stderr interleaved as a terminal shows them. */
  run(command: string): Promise<string>;
  stop(): Promise<void>;
}

interface Setup {
  /** Files of test/docs/files/<dir> copied into the working directory. */
  files?: string;
  /** annex's settings; none: no annex (the CLI only). */
  annex?: ConfigOverrides;
  /** Features of the user's own, as `--load` gives them. */
  features?: () => Promise<Feature[]>;
  /** Policies of policies/ applied before the first command, and enforced. */
  policies?: string[];
  /** Waits before a command the doc shows after a settled state (by the command's prefix). */
  before?: Record<string, () => Promise<void>>;
}

const enforced = (names: string[]) => () =>
  waitForCondition(
    names.map((n) => `admissionpolicy/${n}`),
    'Enforced',
  ).then(() => undefined);

const DEMO_POLICIES = [
  'app-name-label',
  'default-requests',
  'host-network',
  'pinned-images',
  'workload-names',
];

/** The scenes the `<!-- recorded: NAME -->` markers name. */
export const SCENES: Record<string, Setup> = {
  // No control plane needed: offline commands of the CLI.
  cli: {},
  // `annex demo --policies`: the built-in webhooks and AdmissionPolicies.
  policies: {
    files: 'policies',
    annex: { policy: { enabled: true }, metrics: { enabled: false } } as ConfigOverrides,
    before: { 'kubectl get admissionpolicies': enforced(DEMO_POLICIES) },
  },
  // AdmissionPolicies alone (no built-in webhooks), workload-names applied: the API server's
  // own wording for a native policy.
  'policies-native': {
    files: 'policies',
    annex: {
      policy: { enabled: true },
      metrics: { enabled: false },
      admission: { names: { enabled: false }, defaults: { enabled: false } },
    } as ConfigOverrides,
    policies: ['workload-names'],
  },
  // `annex demo`: the built-in webhooks (metrics off: no node here to measure).
  demo: {
    files: 'demo',
    annex: { metrics: { enabled: false } } as ConfigOverrides,
  },
  // The README's `annex demo --load dist/feature.js` of examples/pinned-images.
  'pinned-images': {
    annex: { metrics: { enabled: false } } as ConfigOverrides,
    features: async () => [(await import('../../examples/pinned-images/feature.js')).default],
  },
};

function bash(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `exec 2>&1; ${command}`], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    // A hang guard only: a command of a doc that runs for minutes is a failure in itself.
    const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', () => {
      clearTimeout(guard);
      resolve(out);
    });
  });
}

/** A bin directory putting the scene's kubectl and the built annex first on $PATH. */
function shims(dir: string): string {
  const bin = join(dir, '.bin');
  mkdirSync(bin);
  const write = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  write('annex', `exec "${process.execPath}" "${cli}" "$@"`);
  write('npx', `if [ "$1" = annex ]; then shift; exec annex "$@"; fi\nexec npx "$@"`);
  if (cluster) write('kubectl', `exec "${cluster.kubectl}" "$@"`);
  return bin;
}

export async function startScene(name: string): Promise<Scene> {
  const setup = SCENES[name];
  if (!setup) throw new Error(`no scene ${name} (test/docs/scenes.ts)`);
  const dir = mkdtempSync(join(tmpdir(), `annex-docs-${name}-`));
  for (const top of ['policies', 'test', 'examples']) symlinkSync(join(repo, top), join(dir, top));
  if (setup.files)
    cpSync(join(repo, 'test', 'docs', 'files', setup.files), dir, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${shims(dir)}:${process.env.PATH}`,
    KUBECONFIG: '',
  };
  const cleanups: (() => Promise<unknown>)[] = [async () => rmSync(dir, { recursive: true })];
  const stop = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  // What differs from the doc only by the scene's own choice: its namespace is `default`.
  let ns: string | undefined;
  try {
    if (setup.annex) {
      ns = await createNamespace('docs');
      const kubeconfig = join(dir, '.kubeconfig');
      cpSync(cluster!.adminKubeconfig, kubeconfig);
      await kubectlOk([
        '--kubeconfig',
        kubeconfig,
        'config',
        'set-context',
        '--current',
        `--namespace=${ns}`,
      ]);
      env.KUBECONFIG = kubeconfig;
      cleanups.push(() => kubectl(['delete', 'namespace', ns!, '--wait=false']));
      await startAnnexIn(setup, ns, cleanups);
    }
  } catch (e) {
    await stop();
    throw e;
  }
  const fromNs = ns ? new RegExp(`\\b${ns}\\b`, 'g') : null;
  return {
    async run(command) {
      for (const [prefix, wait] of Object.entries(setup.before ?? {}))
        if (command.startsWith(prefix)) await wait();
      const out = await bash(command, dir, env);
      return fromNs ? out.replace(fromNs, 'default') : out;
    },
    stop,
  };
}

async function startAnnexIn(
  setup: Setup,
  ns: string,
  cleanups: (() => Promise<unknown>)[],
): Promise<void> {
  const policies = setup.annex!.policy?.enabled === true;
  if (policies) {
    await installPolicyCrd();
    cleanups.push(async () => {
      await kubectl(['delete', 'admissionpolicies', '--all', '--ignore-not-found']);
      // annex is stopped by now: what it generated goes by its label.
      for (const kind of ['validatingadmissionpolicybindings', 'validatingadmissionpolicies'])
        await kubectl(['delete', kind, '-l', POLICY_LABEL, '--ignore-not-found']);
    });
  }
  const annex: TestAnnex = await startTestAnnex(setup.annex, (await setup.features?.()) ?? []);
  cleanups.push(() => annex.stop());
  await ensureAnnexService();
  // What `annex manifests` renders for its features; namespaced reviews from this scene only.
  const objs = renderObjects(declarationsOf(annex.annex.features), serviceRefOf(loadConfig({})));
  for (const o of objs as any[])
    for (const w of o.webhooks ?? [])
      w.namespaceSelector = { matchLabels: { 'kubernetes.io/metadata.name': ns } };
  const registered = pointAtTestAnnex(objs as any[], annex.port, annex.caBundle);
  await applyObjects(registered);
  cleanups.push(() => deleteObjects(registered));
  const apiservices = registered.filter((o) => o.kind === 'APIService');
  if (apiservices.length > 0)
    await waitForCondition(
      apiservices.map((o) => `apiservice/${o.metadata.name}`),
      'Available',
    );
  if (setup.policies) {
    await applyObjects(setup.policies.flatMap((p) => repoManifest(`policies/${p}.yaml`)));
    await enforced(setup.policies)();
  }
}
