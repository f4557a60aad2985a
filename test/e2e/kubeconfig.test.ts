// The built CLI finds and authenticates to the real API server as kubectl would: a
// two-file $KUBECONFIG (with a missing entry in between), --context, and an exec
// credential plugin that hands out a ServiceAccount token. And an API server that is not
// there, or accepts and never answers, costs one line and exit 1 within the budget — in
// `certs inject` and in `serve` alike.
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createCa } from '../../src/certs/index.js';
import { applyObjects, deleteObjects } from '../cluster/annex.js';
import { cli, expectOneLineError, runCli, type CliResult } from '../cluster/cli.js';
import { freePort } from '../cluster/control-plane.js';
import {
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  type ClusterInfo,
} from '../cluster/harness.js';

const tmp: string[] = [];
afterAll(() => tmp.forEach((d) => rmSync(d, { recursive: true, force: true })));
function tmpDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'annex-kubeconfig-e2e-'));
  tmp.push(d);
  return d;
}

function kubeconfigAt(server: string, caFile?: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'x',
    contexts: [{ name: 'x', context: { cluster: 'x', user: 'x' } }],
    clusters: [
      { name: 'x', cluster: { server, ...(caFile ? { 'certificate-authority': caFile } : {}) } },
    ],
    users: [{ name: 'x', user: { token: 'unused' } }],
  };
}

describe('annex --version', () => {
  it("prints the package's version", async () => {
    const pkg = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8'),
    );
    const r = await runCli(['--version']);
    expect(r).toMatchObject({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });
});

describe('a dead or silent API server: one line, exit 1, within the budget', () => {
  let dir: string;
  let caFile: string;
  let deadPort: number;
  let silentPort: number;
  const sockets: Socket[] = [];
  // Accepts TCP connections and never says a word, not even a TLS ServerHello.
  const silent = createServer((s) => sockets.push(s));

  beforeAll(async () => {
    dir = tmpDir();
    caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, (await createCa()).certPem);
    deadPort = await freePort(); // nothing listens there
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    silentPort = (silent.address() as { port: number }).port;
    writeFileSync(join(dir, 'dead'), stringify(kubeconfigAt(`https://127.0.0.1:${deadPort}`)));
    writeFileSync(join(dir, 'silent'), stringify(kubeconfigAt(`https://127.0.0.1:${silentPort}`)));
  });
  afterAll(async () => {
    sockets.forEach((s) => s.destroy());
    await new Promise((r) => silent.close(r));
  });

  // The same budget, set the way each command takes it: a flag, or kube.timeoutSeconds.
  const commands: Record<string, { budget: number; run: (kc: string) => Promise<CliResult> }> = {
    'certs inject': {
      budget: 2,
      run: (kc) =>
        runCli(['certs', 'inject', '--timeout', '2', '--ca-file', caFile, '--validating', 'x'], {
          KUBECONFIG: join(dir, kc),
        }),
    },
    serve: {
      budget: 3,
      run: (kc) => {
        const config = join(dir, `serve-${kc}.yaml`);
        writeFileSync(
          config,
          stringify({
            server: { port: 0 },
            tls: { dir: join(dir, 'serve-certs') },
            kube: { kubeconfig: join(dir, kc), timeoutSeconds: 3 },
            log: { level: 'warn' },
          }),
        );
        return runCli(['serve', '--config', config]);
      },
    },
  };

  for (const [name, { budget, run }] of Object.entries(commands)) {
    it(`${name}: a closed port`, async () => {
      const r = await run('dead');
      const line = expectOneLineError(r);
      expect(line).toContain(`cannot connect to the API server at https://127.0.0.1:${deadPort}`);
      expect(line).toContain('ECONNREFUSED');
      expect(r.ms).toBeLessThan(20_000);
      console.log(`${name}, dead API server: ${r.ms} ms: ${line}`);
    });

    it(`${name}: a listener that never answers (${budget} s budget)`, async () => {
      const r = await run('silent');
      const line = expectOneLineError(r);
      expect(line).toContain(
        `the API server at https://127.0.0.1:${silentPort} did not answer within ${budget} s`,
      );
      expect(r.ms).toBeGreaterThanOrEqual(budget * 1000);
      expect(r.ms).toBeLessThan(20_000);
      console.log(`${name}, silent API server: ${r.ms} ms: ${line}`);
    });
  }
});

describeCluster(
  '$KUBECONFIG, --context and an exec plugin against the real API server',
  (c: ClusterInfo) => {
    const WEBHOOK = 'annex-kubeconfig-e2e';
    const webhookConfig = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: WEBHOOK },
      webhooks: [
        {
          name: 'nothing.kubeconfig-e2e.annex.dev',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Ignore',
          clientConfig: { url: 'https://127.0.0.1:1/validate' },
          // A group nobody serves: the webhook is never called.
          rules: [
            {
              apiGroups: ['kubeconfig-e2e.annex.dev'],
              apiVersions: ['v1'],
              operations: ['CREATE'],
              resources: ['nothings'],
            },
          ],
        },
      ],
    };
    let dir: string;
    let ns: string;
    let caFile: string;
    let caPem: string;
    let env: Record<string, string>;
    const calls = () =>
      existsSync(join(dir, 'calls.jsonl'))
        ? readFileSync(join(dir, 'calls.jsonl'), 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l))
        : [];

    beforeAll(async () => {
      dir = tmpDir();
      ns = await createNamespace('kubeconfig-e2e');
      // An identity that may do exactly what `certs inject --validating` needs.
      await kubectlOk(['create', 'serviceaccount', 'injector', '-n', ns]);
      await kubectlOk([
        'create',
        'clusterrole',
        `${ns}-injector`,
        '--verb=get,patch',
        '--resource=validatingwebhookconfigurations.admissionregistration.k8s.io',
      ]);
      await kubectlOk([
        'create',
        'clusterrolebinding',
        `${ns}-injector`,
        `--clusterrole=${ns}-injector`,
        `--serviceaccount=${ns}:injector`,
      ]);
      // And what `annex serve` reads at start.
      await kubectlOk([
        'create',
        'rolebinding',
        `${ns}-auth-reader`,
        '-n',
        'kube-system',
        '--role=extension-apiserver-authentication-reader',
        `--serviceaccount=${ns}:injector`,
      ]);
      const token = (await kubectlOk(['create', 'token', 'injector', '-n', ns])).trim();
      writeFileSync(join(dir, 'sa.token'), token);
      await applyObjects([webhookConfig]);

      // The plugin: logs how it was called, prints an ExecCredential with the token.
      const plugin = join(dir, 'bin', 'sa-token-plugin.js');
      mkdirSync(join(dir, 'bin'));
      writeFileSync(
        plugin,
        `#!${process.execPath}
const fs = require('node:fs');
fs.appendFileSync(${JSON.stringify(join(dir, 'calls.jsonl'))}, JSON.stringify({
  args: process.argv.slice(2), region: process.env.PLUGIN_REGION,
  info: JSON.parse(process.env.KUBERNETES_EXEC_INFO),
}) + '\\n');
// --bad-first: the first answer is a token the API server rejects (401).
const marker = ${JSON.stringify(join(dir, 'bad-given'))};
const bad = process.argv.includes('--bad-first') && !fs.existsSync(marker);
if (bad) fs.writeFileSync(marker, '');
process.stdout.write(JSON.stringify({
  apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
  status: {
    token: bad ? 'not-a-token-the-server-knows' : fs.readFileSync(${JSON.stringify(join(dir, 'sa.token'))}, 'utf8').trim(),
    expirationTimestamp: new Date(Date.now() + 3600e3).toISOString(),
  },
}));
`,
      );
      chmodSync(plugin, 0o755);

      // First file: the contexts, and a current-context that points at nothing useful.
      writeFileSync(
        join(dir, 'contexts.yaml'),
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          'current-context': 'elsewhere',
          contexts: [
            { name: 'elsewhere', context: { cluster: 'nowhere', user: 'via-plugin' } },
            { name: 'e2e', context: { cluster: 'real', user: 'via-plugin' } },
            { name: 'flaky', context: { cluster: 'real', user: 'flaky-plugin' } },
          ],
          clusters: [{ name: 'nowhere', cluster: { server: 'https://127.0.0.1:1' } }],
        }),
      );
      // Second file: the real cluster and the exec user; its "e2e" context loses to the first file's.
      writeFileSync(
        join(dir, 'credentials.yaml'),
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          'current-context': 'e2e',
          contexts: [{ name: 'e2e', context: { cluster: 'nowhere', user: 'nobody' } }],
          clusters: [
            {
              name: 'real',
              cluster: { server: c.server, 'certificate-authority': c.servingCaFile },
            },
          ],
          users: [
            {
              name: 'via-plugin',
              user: {
                exec: {
                  apiVersion: 'client.authentication.k8s.io/v1',
                  command: './bin/sa-token-plugin.js', // relative to this file
                  args: ['--cluster', 'real'],
                  env: [{ name: 'PLUGIN_REGION', value: 'loopback-1' }],
                  provideClusterInfo: true,
                  interactiveMode: 'Never',
                },
              },
            },
            {
              name: 'flaky-plugin',
              user: {
                exec: {
                  apiVersion: 'client.authentication.k8s.io/v1',
                  command: './bin/sa-token-plugin.js',
                  args: ['--bad-first'],
                  interactiveMode: 'IfAvailable',
                },
              },
            },
            {
              name: 'missing-plugin',
              user: {
                exec: {
                  apiVersion: 'client.authentication.k8s.io/v1beta1',
                  command: 'annex-e2e-no-such-plugin',
                  installHint: 'Install it with:\n  go install example.com/no-such-plugin@latest',
                },
              },
            },
          ],
        }),
      );
      writeFileSync(
        join(dir, 'missing-plugin.yaml'),
        stringify({
          contexts: [{ name: 'no-plugin', context: { cluster: 'real', user: 'missing-plugin' } }],
        }),
      );
      const list = [
        join(dir, 'contexts.yaml'),
        join(dir, 'not-there.yaml'),
        join(dir, 'credentials.yaml'),
      ];
      env = { KUBECONFIG: list.join(delimiter) };
      caFile = join(dir, 'inject-ca.crt');
      caPem = (await createCa()).certPem;
      writeFileSync(caFile, caPem);
    });

    afterAll(async () => {
      await deleteObjects([webhookConfig]);
      await kubectl(['delete', 'clusterrolebinding', `${ns}-injector`, '--ignore-not-found']);
      await kubectl(['delete', 'clusterrole', `${ns}-injector`, '--ignore-not-found']);
      await kubectl([
        'delete',
        'rolebinding',
        `${ns}-auth-reader`,
        '-n',
        'kube-system',
        '--ignore-not-found',
      ]);
      await kubectl(['delete', 'namespace', ns, '--wait=false']);
    });

    it('certs inject authenticates through the exec plugin of a merged $KUBECONFIG, with --context', async () => {
      const r = await runCli(
        ['certs', 'inject', '--context', 'e2e', '--ca-file', caFile, '--validating', WEBHOOK],
        env,
      );
      expect(r.stderr).toBe(`patched validatingwebhookconfiguration ${WEBHOOK} (1 webhooks)\n`);
      expect(r.code).toBe(0);
      const got = JSON.parse(
        await kubectlOk(['get', 'validatingwebhookconfiguration', WEBHOOK, '-o', 'json']),
      );
      expect(got.webhooks[0].clientConfig.caBundle).toBe(Buffer.from(caPem).toString('base64'));
      const [call] = calls();
      expect(call).toEqual({
        args: ['--cluster', 'real'],
        region: 'loopback-1',
        info: {
          apiVersion: 'client.authentication.k8s.io/v1',
          kind: 'ExecCredential',
          spec: {
            interactive: false,
            cluster: {
              server: c.server,
              'certificate-authority-data': readFileSync(c.servingCaFile).toString('base64'),
            },
          },
        },
      });
    });

    it('a token the API server rejects (401) makes annex run the plugin again, once', async () => {
      const before = calls().length;
      const r = await runCli(
        ['certs', 'inject', '--context', 'flaky', '--ca-file', caFile, '--validating', WEBHOOK],
        env,
      );
      expect(r.stderr).toBe(`unchanged validatingwebhookconfiguration ${WEBHOOK} (1 webhooks)\n`);
      expect(r.code).toBe(0);
      const flaky = calls().slice(before);
      expect(flaky.map((c) => c.args)).toEqual([['--bad-first'], ['--bad-first']]);
      // Without provideClusterInfo the plugin learns nothing about the cluster.
      expect(flaky[0].info).toEqual({
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        spec: { interactive: false },
      });
    });

    it('the token is the ServiceAccount the API server knows, and the context matters', async () => {
      // Without --context the first file's current-context wins: a dead end, in one line.
      const r = await runCli(
        ['certs', 'inject', '--timeout', '3', '--ca-file', caFile, '--validating', WEBHOOK],
        env,
      );
      expect(expectOneLineError(r)).toContain(
        'cannot connect to the API server at https://127.0.0.1:1',
      );
      // And the plugin's identity is not allowed more than its role: an APIService is Forbidden.
      const forbidden = await runCli(
        [
          'certs',
          'inject',
          '--context',
          'e2e',
          '--ca-file',
          caFile,
          '--apiservice',
          'v1.nothing.annex.dev',
        ],
        env,
      );
      expect(expectOneLineError(forbidden)).toContain(
        `User "system:serviceaccount:${ns}:injector" cannot get resource "apiservices"`,
      );
    });

    it('annex serve starts against the cluster through the same $KUBECONFIG and --context', async () => {
      const before = calls().length;
      const port = await freePort();
      const child = spawn(
        process.execPath,
        [
          cli,
          'serve',
          '--context',
          'e2e',
          '--port',
          String(port),
          '--certs',
          join(dir, 'serve-certs'),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
      );
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (out += d));
      const exited = new Promise<number>((r) => child.once('exit', (code) => r(code ?? -1)));
      try {
        const deadline = Date.now() + 30_000;
        while (
          !out.includes('annex is serving') &&
          child.exitCode === null &&
          Date.now() < deadline
        )
          await new Promise((r) => setTimeout(r, 100));
        expect(out).toContain('loaded authentication configuration');
        expect(out).toContain('annex is serving');
        const mine = calls().slice(before);
        expect(mine.length).toBeGreaterThanOrEqual(1);
        expect(mine[0].info.spec.cluster.server).toBe(c.server);
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    });

    it('an unknown --context, or a plugin that is not installed: one line naming it', async () => {
      const unknown = await runCli(
        ['certs', 'inject', '--context', 'nope', '--ca-file', caFile, '--validating', WEBHOOK],
        env,
      );
      expect(expectOneLineError(unknown)).toContain('context "nope" not found in "contexts"');
      const noPlugin = await runCli(
        ['certs', 'inject', '--context', 'no-plugin', '--ca-file', caFile, '--validating', WEBHOOK],
        {
          KUBECONFIG: [join(dir, 'missing-plugin.yaml'), join(dir, 'credentials.yaml')].join(
            delimiter,
          ),
        },
      );
      expect(expectOneLineError(noPlugin)).toBe(
        'annex: exec plugin "annex-e2e-no-such-plugin" not found: Install it with: go install example.com/no-such-plugin@latest',
      );
    });
  },
);
