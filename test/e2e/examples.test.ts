// The examples as a user has them: annex packed with `npm pack`, installed from the
// tarball into a fresh project, each example type-checked with `tsc --strict` against the
// published declarations, then served by the installed `annex serve --load ...` against
// the real kube-apiserver and used through kubectl. And the README's "Build your own" run
// exactly as written, from the same tarball, up to its scene in `npx annex demo`.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  pointAtTestAnnex,
} from '../cluster/annex.js';
import { freePort } from '../cluster/control-plane.js';
import {
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '..', '..');
const EXAMPLES = ['configmap-sizes', 'pinned-images', 'no-privilege-escalation'];
// Type-checked too; served against the API server by test/e2e/conversion.test.ts (its CRD
// is cluster-wide, and that test owns it).
const TYPECHECKED = [...EXAMPLES, 'crontab'];
const devDeps = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).devDependencies;

describeCluster('examples, from a packed tarball', (c) => {
  const dir = mkdtempSync(join(tmpdir(), 'annex-examples-'));
  const bin = join(dir, 'node_modules', 'annex', 'dist', 'cli', 'main.js');
  const config = join(dir, 'annex.yaml');
  const loads = EXAMPLES.flatMap((e) => ['--load', join(dir, e, 'dist', 'feature.js')]);
  let server: ChildProcess | undefined;
  let log = '';
  let registered: any[] = [];
  let ns = '';
  let tarball = '';
  let tscOutput = '';

  beforeAll(async () => {
    const packed = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], {
      cwd: repo,
    });
    tarball = join(dir, packed.stdout.trim().split('\n').pop()!);
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'annex-examples-check',
        private: true,
        type: 'module',
        dependencies: { annex: `file:${tarball}` },
        devDependencies: { typescript: devDeps.typescript, '@types/node': devDeps['@types/node'] },
      }),
    );
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: dir,
      timeout: 300_000,
    });
    for (const e of TYPECHECKED) {
      cpSync(join(repo, 'examples', e), join(dir, e), {
        recursive: true,
        filter: (src) => !src.includes('node_modules') && !src.endsWith('package.json'),
      });
    }
    // Only the examples' features: the built-in ones have their own tests.
    writeFileSync(
      config,
      'admission: {names: {enabled: false}, defaults: {enabled: false}}\nmetrics: {enabled: false}\n',
    );
    // One `tsc -b` over every example's own tsconfig: one process that reads the standard
    // library's and annex's declarations once (four `tsc -p` took about twice as long).
    const tsc = join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
    tscOutput = await run(process.execPath, [tsc, '-b', ...TYPECHECKED], { cwd: dir }).then(
      (r) => r.stdout + r.stderr,
      (err: { stdout: string; stderr?: string }) => err.stdout + (err.stderr ?? ''),
    );
  }, 400_000);

  afterAll(async () => {
    server?.kill('SIGTERM');
    await deleteObjects(registered);
    if (ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(TYPECHECKED)(
    '%s type-checks with tsc --strict against the published types',
    async (e) => {
      // tsc names the file of each fault: a fault is this example's unless it names another's.
      const faults = tscOutput
        .split('\n')
        .filter((l) => l && !TYPECHECKED.some((other) => other !== e && l.startsWith(`${other}/`)));
      expect(faults).toEqual([]);
      expect(readFileSync(join(dir, e, 'dist', 'feature.js'), 'utf8')).toContain("from 'annex'");
    },
  );

  it('the installed annex serves them, and renders their registrations', async () => {
    const port = await freePort();
    const certs = join(dir, 'certs');
    server = spawn(
      process.execPath,
      [
        bin,
        'serve',
        '-c',
        config,
        '--port',
        String(port),
        '--certs',
        certs,
        '--kubeconfig',
        c.adminKubeconfig,
        ...loads,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    server.stdout!.on('data', (d) => (log += d));
    server.stderr!.on('data', (d) => (log += d));
    for (let i = 0; i < 300 && !log.includes('annex is serving'); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(log).toContain('annex is serving');

    const { stdout } = await run(process.execPath, [bin, 'manifests', '-c', config, ...loads]);
    const objs = parseAllDocuments(stdout).map((d) => d.toJSON());
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'APIService/v1alpha1.sizes.example.com',
      'MutatingWebhookConfiguration/annex-no-privilege-escalation',
      'ValidatingWebhookConfiguration/annex-pinned-images',
    ]);
    ns = await createNamespace('examples');
    // Only this test's namespace reaches the examples' webhooks.
    for (const o of objs) {
      for (const w of o.webhooks ?? []) {
        w.namespaceSelector = { matchLabels: { 'kubernetes.io/metadata.name': ns } };
      }
    }
    const caBundle = readFileSync(join(certs, 'ca.crt')).toString('base64');
    registered = pointAtTestAnnex(objs, port, caBundle);
    await ensureAnnexService();
    await applyObjects(registered);
    await waitForCondition(['apiservice/v1alpha1.sizes.example.com'], 'Available');
  });

  it('configmap-sizes: kubectl get, -w and explain on the aggregated resource', async () => {
    await kubectlOk([
      'create',
      'configmap',
      'app',
      '-n',
      ns,
      '--from-literal=a=hello',
      '--from-literal=b=hi',
    ]);
    let table = '';
    for (let i = 0; i < 50 && !/app\s+2\s+7/.test(table); i++) {
      await new Promise((r) => setTimeout(r, 200));
      table = (await kubectl(['get', 'configmapsizes', '-n', ns])).stdout;
    }
    expect(table).toMatch(/^NAME\s+KEYS\s+BYTES\n/);
    expect(table).toMatch(/app\s+2\s+7/);

    const watch = spawn(
      c.kubectl,
      [
        '--kubeconfig',
        c.adminKubeconfig,
        'get',
        'configmapsizes',
        '-n',
        ns,
        '-w',
        '--output-watch-events',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let seen = '';
    watch.stdout.on('data', (d) => (seen += d));
    try {
      for (let i = 0; i < 50 && !seen.includes('app'); i++)
        await new Promise((r) => setTimeout(r, 100));
      await kubectlOk(['create', 'configmap', 'later', '-n', ns, '--from-literal=k=12345']);
      for (let i = 0; i < 100 && !/ADDED\s+later\s+1\s+5/.test(seen); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(seen).toMatch(/ADDED\s+later\s+1\s+5/);
    } finally {
      watch.kill();
    }

    // The aggregator fetches a new group's OpenAPI in the background: wait for it.
    const explain = await eventually(() => kubectlOk(['explain', 'configmapsizes']));
    expect(explain).toContain('KIND:       ConfigMapSize');
    expect(explain).toContain('How much one ConfigMap holds.');
    expect(await kubectlOk(['explain', 'configmapsizes.bytes'])).toContain('Bytes of all values.');
  });

  it('pinned-images: kubectl refuses floating images with built-in-style causes', async () => {
    const pod = await kubectl(['run', 'floating', '-n', ns, '--image=nginx']);
    expect(pod.code).not.toBe(0);
    expect(pod.stderr).toContain(
      'spec.containers[0].image: Invalid value: "nginx": must be pinned to a tag or digest',
    );
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: ns },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            containers: [
              { name: 'web', image: 'nginx:latest' },
              { name: 'ok', image: 'nginx:1.27' },
            ],
          },
        },
      },
    };
    const applied = await kubectl(['apply', '-f', '-'], { input: JSON.stringify(deployment) });
    expect(applied.code).not.toBe(0);
    expect(applied.stderr).toContain(
      'The Deployment "web" is invalid: spec.template.spec.containers[0].image: Invalid value: "nginx:latest": must be pinned to a tag or digest',
    );
    expect(
      (await kubectl(['run', 'pinned', '-n', ns, '--image=nginx:1.27', '--dry-run=server'])).code,
    ).toBe(0);
  });

  const dryRunPod = (...extra: string[]) =>
    kubectl([
      'run',
      'app',
      '-n',
      ns,
      '--image=nginx:1.27',
      '--dry-run=server',
      '-o',
      'json',
      ...extra,
    ]);

  it('no-privilege-escalation: the returned object becomes a JSON Patch', async () => {
    const r = await dryRunPod();
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).spec.containers[0].securityContext).toEqual({
      allowPrivilegeEscalation: false,
    });
    expect(r.stderr).toContain('Warning: annex: container "app" may not escalate privileges');
    const explicit = await dryRunPod(
      '--overrides',
      JSON.stringify({
        spec: {
          containers: [
            {
              name: 'app',
              image: 'nginx:1.27',
              securityContext: { allowPrivilegeEscalation: true },
            },
          ],
        },
      }),
    );
    expect(JSON.parse(explicit.stdout).spec.containers[0].securityContext).toEqual({
      allowPrivilegeEscalation: true,
    });
    expect(explicit.stderr).not.toContain('may not escalate');
  });

  it(`the README's "Build your own", exactly as written, in an npm init -y project`, async () => {
    const readme = buildYourOwn();
    expect(readme.ts).toBe(readFileSync(join(repo, 'examples/pinned-images/feature.ts'), 'utf8'));
    // Beside a checkout of annex holding its `npm pack`, as the README assumes.
    const home = mkdtempSync(join(tmpdir(), 'annex-newcomer-'));
    mkdirSync(join(home, 'annex'));
    cpSync(tarball, join(home, 'annex', basename(tarball)));
    // npm's cache first: the registry is asked only for what it lacks.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      KUBECONFIG: '',
      npm_config_prefer_offline: 'true',
    };
    try {
      await run('bash', ['-euo', 'pipefail', '-c', readme.sh], {
        cwd: home,
        env,
        timeout: 600_000,
      });
      const project = join(home, 'pinned-images');
      writeFileSync(join(project, 'feature.ts'), readme.ts);
      const [demoCommand] = commandsOf(readme.demo);
      // Its own process group, as a terminal's: Ctrl-C reaches npx, node and the control plane.
      const demo = spawn('bash', ['-c', demoCommand!], {
        cwd: project,
        env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      demo.stdout!.on('data', (d) => (out += d));
      demo.stderr!.on('data', (d) => (out += d));
      const exited = new Promise<number | null>((r) => demo.once('exit', (code) => r(code)));
      let demoDir = '';
      try {
        const ready = await Promise.race([
          exited.then(() => false),
          (async () => {
            while (!out.includes('annex demo is ready'))
              await new Promise((r) => setTimeout(r, 200));
            return true;
          })(),
        ]);
        expect(ready, out).toBe(true);
        const kubeconfig = /export KUBECONFIG=(\S+)/.exec(out)![1]!;
        const demoKubectl = /alias kubectl=(\S+)/.exec(out)![1]!;
        demoDir = dirname(kubeconfig);
        // "In another shell, with the KUBECONFIG and the kubectl it printed".
        const shell = (command: string) =>
          run('bash', ['-c', `${command} 2>&1`], {
            env: { ...env, KUBECONFIG: kubeconfig, PATH: `${dirname(demoKubectl)}:${env.PATH}` },
          }).then(
            (r) => ({ code: 0, out: r.stdout }),
            (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
          );
        const [command, ...expected] = readme.scene;
        const scene = await shell(command!);
        expect(scene.code).toBe(1);
        expect(scene.out.trimEnd().split('\n')).toEqual(expected);

        // What kube-controller-manager brings: a new namespace's ServiceAccount (Pods can be
        // created), garbage collection, and namespace deletion that completes.
        await shell('kubectl create namespace newcomer');
        const pod = await eventually(async () => {
          const r = await shell('kubectl run app -n newcomer --image=nginx:1.27');
          return r.code === 0 ? r.out : undefined;
        }, 60_000);
        expect(pod).toContain('pod/app created');
        await shell('kubectl create deployment web -n newcomer --image=nginx:1.27');
        await eventually(async () => {
          const r = await shell('kubectl get replicasets -n newcomer -o name');
          return r.out.includes('replicaset.apps/web-') ? true : undefined;
        }, 60_000);
        await shell('kubectl delete deployment web -n newcomer');
        await eventually(async () => {
          const r = await shell('kubectl get replicasets -n newcomer -o name');
          return r.code === 0 && r.out.trim() === '' ? true : undefined;
        }, 60_000);
        const deleted = await shell('kubectl delete namespace newcomer --timeout=120s');
        expect(deleted).toEqual({ code: 0, out: 'namespace "newcomer" deleted\n' });
      } finally {
        process.kill(-demo.pid!, 'SIGINT');
      }
      // Ctrl-C stops annex and the control plane (every process of the group), and deletes
      // their files. (npx passes the signal on and exits by it: its code says nothing.)
      await exited;
      const groupGone = () => {
        try {
          process.kill(-demo.pid!, 0);
          return false;
        } catch {
          return true;
        }
      };
      await eventually(
        async () => (groupGone() && !existsSync(demoDir) ? true : undefined),
        60_000,
      );
      expect(out).not.toMatch(/^annex: |\n\s+at /m);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }, 900_000);
});

/** The README's "Build your own": the feature, the project's commands, the demo and its scene. */
function buildYourOwn() {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Build your own\n');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const blocks = [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1],
    text: m[2]!,
  }));
  const [demo, scene] = blocks.filter((b) => b.lang === 'console').map((b) => b.text);
  return {
    ts: blocks.find((b) => b.lang === 'ts')!.text,
    sh: blocks.find((b) => b.lang === 'sh')!.text,
    demo: demo!,
    // `$ command` and the lines it prints.
    scene: scene!
      .trimEnd()
      .split('\n')
      .map((l, i) => (i === 0 ? l.replace(/^\$ /, '') : l)),
  };
}

/** The `$ ` lines of a console block, without their trailing `# comment`. */
function commandsOf(block: string): string[] {
  return block
    .split('\n')
    .filter((l) => l.startsWith('$ '))
    .map((l) => l.slice(2).replace(/\s+#.*$/, ''));
}
