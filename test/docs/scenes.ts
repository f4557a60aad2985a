// Where the console blocks of the docs run: a scene is a shell environment on the test
// control plane — `kubectl` with a kubeconfig of the scene's own namespace, `annex` and
// `npx annex` the built CLI, the files a page refers to in the working directory — and,
// for most, annex started the way the page says.
import { spawn } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type ConfigOverrides } from '../../src/config/load.js';
import { declarationsOf, renderObjects, serviceRefOf } from '../../src/manifests/render.js';
import type { Feature } from '../../src/core/feature.js';
import { loadFeatureModules } from '../../src/server/load-features.js';
import { POLICY_LABEL } from '../../src/policy/cel/index.js';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  installPolicyCrd,
  pointAtTestAnnex,
  registerApiServices,
  repoManifest,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { cli } from '../cluster/cli.js';
import { freePort } from '../cluster/control-plane.js';
import { otherCaReview, prepareCallers } from './scene-callers.js';
import { prepareConversion } from './scene-conversion.js';
import { startKubelets } from './scene-metrics.js';
import { cluster, createNamespace, kubectl, waitForCondition } from '../cluster/harness.js';

const repo = join(import.meta.dirname, '..', '..');

/** What a scene's own preparation sees and extends. */
export interface SceneContext {
  dir: string;
  /** Where the commands run. */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The scene's namespace ('' for the CLI alone). */
  ns: string;
  /** Run in reverse order when the scene stops. */
  cleanups: (() => Promise<unknown>)[];
  /** What the run prints → what the doc shows: only what the scene itself chose. */
  shown: [RegExp, string][];
  /** The CA of the annex the scene started, base64 PEM ('' for none). */
  caBundle: string;
  /** The port of the annex the scene started (0: none). */
  port: number;
  /** What the doc's command says → what runs: only what the scene itself chose (a port). */
  typed: [RegExp, string][];
}

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
  /** Working directory under the scene's directory. */
  cwd?: string;
  /** What annex scrapes, started before it: returns settings merged over `annex`. */
  beforeAnnex?: (ctx: SceneContext) => Promise<ConfigOverrides>;
  /** What a scene needs beyond annex: its own files, processes and cleanups. */
  prepare?: (ctx: SceneContext) => Promise<void>;
  /** The scene works on the control plane (a namespace, a kubeconfig) without annex started. */
  cluster?: boolean;
  /** When a `command &` is ready (what it printed until then is its output). */
  ready?: RegExp;
  /**
   * A dry run that answers `until` once the API server uses the scene's webhooks and
   * policies: it applies new configurations a moment after storing them.
   */
  settled?: { command: string; until: RegExp };
  /** Waits before a command the doc shows after a settled state (by the command's prefix). */
  before?: Record<string, (ctx: SceneContext) => Promise<void>>;
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
    before: {
      'kubectl get admissionpolicies': enforced(DEMO_POLICIES),
      // The native policies are in force once the API server denies with them. The probe's
      // image is pinned: until the policies are in force its review reaches annex's webhook,
      // and a pinned-images denial of it would be one more row of `admissionevents`.
      'kubectl apply -f web.yaml': (ctx) =>
        until(
          'kubectl create deployment probe.x --image=nginx:1.27 --dry-run=server',
          (out) => /annex-workload-names/.test(out) && /annex-app-name-label/.test(out),
          ctx,
        ),
    },
  },
  // docs/policies.md's background scans: a Deployment that breaks pinned-images exists
  // before the policy; PolicyReports (policy.reports) show it, then its fix.
  'policy-reports': {
    files: 'policies',
    annex: {
      policy: { enabled: true, reports: { enabled: true, resyncSeconds: 300 } },
      metrics: { enabled: false },
      admission: { names: { enabled: false }, defaults: { enabled: false } },
    } as ConfigOverrides,
    before: {
      // The scan follows the watch: wait until the report says what the Deployment now is.
      'kubectl get policyreport': (ctx) =>
        until(
          "kubectl get deployment web -o jsonpath='{.spec.template.spec.containers[0].image} '; kubectl get policyreport annex-policies -o jsonpath='{.summary.fail}'",
          (out) =>
            /^\S+ \d+$/.test(out.trim()) && out.includes(':latest ') === out.trim().endsWith(' 1'),
          ctx,
        ),
    },
  },
  // docs/policies.md's PolicyExceptions: a native policy, then an exception naming it (the
  // policy moves to annex's webhook), an exempted create and a refused one.
  'policy-exceptions': {
    files: 'exceptions',
    annex: {
      policy: { enabled: true },
      metrics: { enabled: false },
      admission: { names: { enabled: false }, defaults: { enabled: false } },
    } as ConfigOverrides,
    before: {
      'kubectl get admissionpolicies': (ctx) =>
        until(
          'kubectl get admissionpolicy require-team --no-headers',
          (out) => /True\s+True\s+ValidatingAdmissionPolicy/.test(out),
          ctx,
        ),
      // The exception's status written, the policy on the webhook, and the API server done
      // with the VAP: probed in another namespace (the policy's VAP binds every namespace,
      // annex's webhook this scene's only), so the probe leaves no decision behind.
      'kubectl get polex': async (ctx) => {
        await until(
          "kubectl get polex legacy -o jsonpath='{.status.conditions[0].status}'; kubectl get admissionpolicy require-team --no-headers",
          (out) => out.startsWith('True') && /True\s+True\s+webhook/.test(out),
          ctx,
        );
        await until(
          'kubectl create deployment probe -n kube-public --image=nginx:1.27 --dry-run=server',
          (out) => out.includes('created (server dry run)'),
          ctx,
        );
      },
      'kubectl events': (ctx) =>
        until(
          'kubectl events --for deployment/legacy-db',
          (out) => /PolicyExempted/.test(out),
          ctx,
        ),
    },
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
    settled: {
      command: 'kubectl create deployment probe.x --image=nginx:1.27 --dry-run=server',
      until: /annex-workload-names/,
    },
  },
  // docs/admission-callers.md: `annex demo --policies` with host-network.yaml applied, and a
  // review POSTed by hand (forged.json) with no client certificate.
  callers: {
    files: 'callers',
    annex: { policy: { enabled: true }, metrics: { enabled: false } } as ConfigOverrides,
    policies: ['host-network'],
    settled: {
      command: 'kubectl run probe --image=nginx:1.27 --dry-run=server',
      until: /defaulted/,
    },
    prepare: prepareCallers,
    before: {
      // Two reviews from a client of another CA, as the page says before its readyz block.
      'curl -s --cacert ca.crt https://127.0.0.1:44415/readyz?verbose': async (ctx) => {
        const post = await otherCaReview(ctx);
        for (const out of [await bash(post, ctx), await bash(post, ctx)])
          if (!out.includes('"allowed"')) throw new Error(`${post}: ${out}`);
      },
    },
  },
  // `annex demo`: the built-in webhooks (metrics off: no node here to measure).
  demo: {
    files: 'demo',
    annex: { metrics: { enabled: false } } as ConfigOverrides,
    settled: {
      command:
        'kubectl run probe --image=nginx:1.27 --dry-run=server; kubectl create deployment probe.x --image=nginx:1.27 --dry-run=server',
      until: /defaulted[\s\S]*names\.annex\.dev/,
    },
  },
  // README.md: `npm start` with no API server, serving this machine as one node.
  standalone: {
    prepare: prepareStandalone,
    // The first NodeMetrics needs two samples of this machine, a window apart.
    before: {
      'curl -s --cacert certs/ca.crt https://127.0.0.1:8443/apis/metrics.annex.dev': (ctx) =>
        until(
          `curl -s --cacert certs/ca.crt https://127.0.0.1:${ctx.port}/apis/metrics.annex.dev/v1beta1/nodes`,
          (out) => out.includes('"items":[{'),
          ctx,
        ),
    },
  },
  // docs/conversion.md: CronTab's conversion webhook served by `annex serve --load`.
  conversion: {
    files: 'conversion',
    cwd: 'crontab',
    cluster: true,
    prepare: prepareConversion,
    ready: /annex is serving/,
  },
  // docs/tour.md's metrics: the metrics.annex.dev and metrics.k8s.io APIs of test kubelets.
  metrics: {
    annex: {} as ConfigOverrides,
    beforeAnnex: startKubelets,
    // Every pod has a window once annex scraped each kubelet twice.
    settled: { command: 'kubectl get podmetrics -A -o name | wc -l', until: /^\s*5\s*$/ },
  },
  // The README's `annex demo --load dist/feature.js` of examples/pinned-images.
  'pinned-images': {
    annex: { metrics: { enabled: false } } as ConfigOverrides,
    features: () => loadFeatureModules([join(repo, 'examples', 'pinned-images', 'feature.ts')]),
    settled: {
      command: 'kubectl run probe --image=nginx --dry-run=server',
      until: /must be pinned/,
    },
  },
};

/** Runs one command line in bash; stdout and stderr interleaved as a terminal shows them. */
function bash(command: string, ctx: SceneContext): Promise<string> {
  const child = spawn('bash', ['-c', `exec 2>&1; ${command}`], {
    cwd: ctx.cwd,
    env: ctx.env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
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

/**
 * `command &`: started and left running (stopped with the scene); what it printed until a
 * line matches `ready` is its output, as a terminal shows it before the next prompt.
 */
export function background(command: string, ready: RegExp, ctx: SceneContext): Promise<string> {
  const child = spawn('bash', ['-c', `exec 2>&1; exec ${command}`], {
    cwd: ctx.cwd,
    env: ctx.env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((r) => child.once('close', r));
  ctx.cleanups.push(async () => {
    child.kill('SIGTERM');
    await exited;
  });
  return new Promise((resolve) => {
    let out = '';
    const done = () => {
      clearTimeout(guard);
      resolve(out);
    };
    const guard = setTimeout(done, 60_000);
    child.stdout.on('data', (d) => {
      out += d;
      if (ready.test(out)) done();
    });
    void exited.then(done);
  });
}

function which(cmd: string): string {
  const dir = (process.env.PATH ?? '').split(':').find((d) => existsSync(join(d, cmd)));
  return dir ? join(dir, cmd) : cmd;
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
  // curl shows no progress meter when the body goes to a terminal; here it goes to a pipe.
  write('curl', `exec "${which('curl')}" --no-progress-meter "$@"`);
  if (cluster) write('kubectl', `exec "${cluster.kubectl}" "$@"`);
  return bin;
}

/** Whether a scene needs the test control plane (the others run without Go too). */
export const needsCluster = (name: string): boolean =>
  !!(SCENES[name]?.annex || SCENES[name]?.cluster);

export async function startScene(name: string): Promise<Scene> {
  const setup = SCENES[name];
  if (!setup) throw new Error(`no scene ${name} (test/docs/scenes.ts)`);
  const dir = mkdtempSync(join(tmpdir(), `annex-docs-${name}-`));
  for (const top of ['policies', 'test', 'examples']) symlinkSync(join(repo, top), join(dir, top));
  if (setup.files)
    cpSync(join(repo, 'test', 'docs', 'files', setup.files), dir, { recursive: true });
  const ctx: SceneContext = {
    dir,
    cwd: join(dir, setup.cwd ?? ''),
    env: {
      ...process.env,
      PATH: `${shims(dir)}:${process.env.PATH}`,
      KUBECONFIG: '',
      // kubectl's discovery cache of this scene's APIs only (not another run's stale one).
      KUBECACHEDIR: join(dir, '.kube-cache'),
    },
    ns: '',
    cleanups: [async () => rmSync(dir, { recursive: true })],
    shown: [],
    typed: [],
    port: 0,
    caBundle: '',
  };
  mkdirSync(ctx.cwd, { recursive: true });
  const stop = async () => {
    for (const c of ctx.cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    if (setup.annex || setup.cluster) {
      // The scene's own namespace, which the doc shows as `default`.
      ctx.ns = await createNamespace('docs');
      ctx.cleanups.push(() => kubectl(['delete', 'namespace', ctx.ns, '--wait=false']));
      ctx.env.KUBECONFIG = join(dir, '.kubeconfig');
      cpSync(cluster!.adminKubeconfig, ctx.env.KUBECONFIG);
      await bash(`kubectl config set-context --current --namespace=${ctx.ns}`, ctx);
      ctx.shown.push([new RegExp(`\\b${ctx.ns}\\b`, 'g'), 'default']);
    }
    if (setup.annex)
      await startAnnexIn(setup, { ...setup.annex, ...(await setup.beforeAnnex?.(ctx)) }, ctx);
    await setup.prepare?.(ctx);
    const settled = setup.settled;
    if (settled) await until(settled.command, (out) => settled.until.test(out), ctx);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    async run(shownCommand) {
      let command = shownCommand;
      for (const [from, to] of ctx.typed) command = command.replace(from, to);
      for (const [prefix, wait] of Object.entries(setup.before ?? {}))
        if (shownCommand.startsWith(prefix)) await wait(ctx);
      const bg = /^(.*?)\s*&\s*(#.*)?$/.exec(command);
      let out = bg ? await background(bg[1]!, setup.ready ?? /\n/, ctx) : await bash(command, ctx);
      for (const [from, to] of ctx.shown) out = out.replace(from, to);
      return out;
    },
    stop,
  };
}

/** Runs a command until what it prints satisfies `done` (a hang guard of 60 s). */
async function until(command: string, done: (out: string) => boolean, ctx: SceneContext) {
  const deadline = Date.now() + 60_000;
  let out = '';
  while (!done((out = await bash(command, ctx)))) {
    if (Date.now() > deadline) throw new Error(`${command}: still ${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `npm start` (annex serve --policies, no API server) on a free port the doc shows as 8443. */
async function prepareStandalone(ctx: SceneContext): Promise<void> {
  const port = await freePort();
  writeFileSync(join(ctx.cwd, 'annex.yaml'), `server: {port: ${port}}\n`);
  await background('annex serve -c annex.yaml --policies', /annex is serving/, ctx);
  ctx.port = port;
  ctx.typed.push([/127\.0\.0\.1:8443\b/g, `127.0.0.1:${port}`]);
  ctx.shown.push([new RegExp(`"${hostname()}"`, 'g'), '"vm"']);
}

async function startAnnexIn(
  setup: Setup,
  config: ConfigOverrides,
  ctx: SceneContext,
): Promise<void> {
  const { ns, cleanups } = ctx;
  const policies = config.policy?.enabled === true;
  if (policies) {
    await installPolicyCrd();
    cleanups.push(async () => {
      await kubectl(['delete', 'admissionpolicies', '--all', '--ignore-not-found']);
      // annex is stopped by now: what it generated goes by its label.
      for (const kind of ['validatingadmissionpolicybindings', 'validatingadmissionpolicies'])
        await kubectl(['delete', kind, '-l', POLICY_LABEL, '--ignore-not-found']);
    });
  }
  const annex: TestAnnex = await startTestAnnex(config, (await setup.features?.()) ?? []);
  cleanups.push(() => annex.stop());
  ctx.port = annex.port;
  ctx.caBundle = annex.caBundle;
  // A loopback URL in the doc is annex's, at the port the scene's annex listens on.
  ctx.typed.push([/\b127\.0\.0\.1:\d+\b/g, `127.0.0.1:${annex.port}`]);
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
  // As the docs register it: apiservice/metrics-k8s-io, beside what `annex manifests` renders.
  if (config.metrics?.registerMetricsK8sIo) {
    const k8sio = await registerApiServices('apiservice/metrics-k8s-io/apiservice.yaml', annex);
    cleanups.push(() => deleteObjects(k8sio));
  }
  if (setup.policies) {
    await applyObjects(setup.policies.flatMap((p) => repoManifest(`policies/${p}.yaml`)));
    await enforced(setup.policies)();
  }
}
