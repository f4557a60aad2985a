// The examples as a user has them: annex packed with `npm pack`, installed from the
// tarball into a fresh project, each example type-checked with `tsc --strict` against the
// published declarations, then served by the installed `annex serve --load ...` against
// the real kube-apiserver and used through kubectl.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  let tscOutput = '';

  beforeAll(async () => {
    const packed = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], {
      cwd: repo,
    });
    const tarball = join(dir, packed.stdout.trim().split('\n').pop()!);
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
});
