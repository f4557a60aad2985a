import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  execCredentialSource,
  execInfo,
  parseExecConfig,
  parseExecCredential,
  runPlugin,
  type ExecConfig,
  type ExecRunner,
} from './exec.js';
import { lateness } from '../../test/unit/lateness.js';

const V1 = 'client.authentication.k8s.io/v1';
const V1BETA1 = 'client.authentication.k8s.io/v1beta1';

const cfg = (more: Partial<ExecConfig> = {}): ExecConfig => ({
  apiVersion: V1,
  command: 'get-token',
  args: [],
  env: [],
  provideClusterInfo: false,
  interactiveMode: 'Never',
  ...more,
});

const credential = (status: unknown, apiVersion = V1) =>
  JSON.stringify({ apiVersion, kind: 'ExecCredential', status });

describe('parseExecConfig', () => {
  const parse = (exec: unknown) => parseExecConfig(exec, '/k/config: user "u"', '/k');

  it('resolves a command path against the kubeconfig folder, leaves a bare name for PATH', () => {
    const c = parse({
      apiVersion: V1,
      command: './bin/tok',
      args: ['a'],
      env: [{ name: 'X', value: '1' }],
      interactiveMode: 'IfAvailable',
      provideClusterInfo: true,
      installHint: 'brew install tok',
    });
    expect(c).toEqual({
      apiVersion: V1,
      command: '/k/bin/tok',
      args: ['a'],
      env: [{ name: 'X', value: '1' }],
      interactiveMode: 'IfAvailable',
      provideClusterInfo: true,
      installHint: 'brew install tok',
    });
    expect(parse({ apiVersion: V1BETA1, command: 'aws' })).toMatchObject({
      command: 'aws',
      interactiveMode: 'IfAvailable', // v1beta1's default
      provideClusterInfo: false,
    });
  });

  it('refuses what kubectl refuses, and interactive plugins', () => {
    expect(() => parse({ apiVersion: V1, command: 'aws' })).toThrow(
      '/k/config: user "u": exec: "interactiveMode" must be specified for client.authentication.k8s.io/v1',
    );
    expect(() =>
      parse({ apiVersion: 'client.authentication.k8s.io/v1alpha1', command: 'a' }),
    ).toThrow(
      /"apiVersion" must be one of client.authentication.k8s.io\/v1, client.authentication.k8s.io\/v1beta1/,
    );
    expect(() => parse({ apiVersion: V1, interactiveMode: 'Never' })).toThrow(
      '"command" is not set',
    );
    expect(() => parse({ apiVersion: V1, command: 'a', interactiveMode: 'Sometimes' })).toThrow(
      'invalid "interactiveMode" "Sometimes"',
    );
    expect(() =>
      parse({ apiVersion: V1, command: 'a', env: { X: '1' }, interactiveMode: 'Never' }),
    ).toThrow('"env" must be a list of {name, value}');
    expect(() =>
      parse({ apiVersion: V1, command: 'kubelogin', interactiveMode: 'Always' }),
    ).toThrow(
      /plugin "kubelogin" needs interactiveMode Always \(a terminal\); annex never runs plugins interactively/,
    );
  });
});

describe('parseExecCredential', () => {
  it('reads a token, a certificate pair and the expiry', () => {
    expect(
      parseExecCredential(
        credential({ token: 't', expirationTimestamp: '2030-01-01T00:00:00Z' }),
        cfg(),
      ),
    ).toEqual({ credential: { token: 't' }, expiresAt: Date.parse('2030-01-01T00:00:00Z') });
    const pair = parseExecCredential(
      credential({ clientCertificateData: 'CERT', clientKeyData: 'KEY' }, V1BETA1),
      cfg({ apiVersion: V1BETA1 }),
    );
    expect([pair.credential.cert?.toString(), pair.credential.key?.toString()]).toEqual([
      'CERT',
      'KEY',
    ]);
    expect(pair.expiresAt).toBeUndefined();
  });

  it("refuses with client-go's reasons, naming the command", () => {
    const bad = (out: string) => () => parseExecCredential(out, cfg());
    expect(bad('Password:')).toThrow(
      'exec plugin "get-token": did not print an ExecCredential (stdout is not JSON)',
    );
    expect(bad(credential({ token: 't' }, V1BETA1))).toThrow(
      'exec plugin "get-token": is configured to use API version client.authentication.k8s.io/v1, plugin returned version "client.authentication.k8s.io/v1beta1"',
    );
    expect(bad(JSON.stringify({ apiVersion: V1, kind: 'ExecCredential' }))).toThrow(
      'did not return a status field',
    );
    expect(bad(credential({}))).toThrow('did not return a token or cert/key pair');
    expect(bad(credential({ clientCertificateData: 'C' }))).toThrow(
      'returned only certificate or key, not both',
    );
    expect(bad(credential({ token: 't', expirationTimestamp: 'soon' }))).toThrow(
      'invalid expirationTimestamp "soon"',
    );
  });
});

describe('execCredentialSource', () => {
  it('runs once, keeps the answer until it expires or is rejected, and shares a run in flight', async () => {
    let now = 1_000;
    let runs = 0;
    const infos: string[] = [];
    const run: ExecRunner = async (_c, info) => {
      runs++;
      infos.push(info);
      await new Promise((r) => setTimeout(r, 10));
      return credential({
        token: `t${runs}`,
        expirationTimestamp: new Date(now + 60_000).toISOString(),
      });
    };
    const src = execCredentialSource(
      cfg({ provideClusterInfo: true }),
      { server: 'https://k' },
      {
        run,
        now: () => now,
      },
    );
    const [a, b] = await Promise.all([src.get({ timeoutMs: 1 }), src.get({ timeoutMs: 1 })]);
    expect([a.token, b.token, runs]).toEqual(['t1', 't1', 1]);
    now += 59_000;
    expect((await src.get({ timeoutMs: 1 })).token).toBe('t1');
    now += 1_000; // expired
    const c = await src.get({ timeoutMs: 1 });
    expect([c.token, runs]).toEqual(['t2', 2]);
    // A 401 for a credential that is no longer the current one does not drop the current one.
    expect(src.rejected(a)).toBe(true);
    expect((await src.get({ timeoutMs: 1 })).token).toBe('t2');
    expect(src.rejected(c)).toBe(true);
    expect((await src.get({ timeoutMs: 1 })).token).toBe('t3');
    expect(JSON.parse(infos[0]!)).toEqual({
      apiVersion: V1,
      kind: 'ExecCredential',
      spec: { interactive: false, cluster: { server: 'https://k' } },
    });
  });

  it('without provideClusterInfo the plugin learns nothing about the cluster', () => {
    expect(JSON.parse(execInfo(cfg(), { server: 'https://k' }))).toEqual({
      apiVersion: V1,
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
  });
});

describe('runPlugin (a real child process)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'annex-exec-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const script = (name: string, body: string) => {
    const p = join(dir, name);
    writeFileSync(p, `#!${process.execPath}\n${body}\n`);
    chmodSync(p, 0o755);
    return p;
  };

  it('passes args, env and KUBERNETES_EXEC_INFO, and closes stdin', async () => {
    const out = join(dir, 'seen.json');
    const command = script(
      'echo-env.js',
      `const fs = require('fs');
let stdin = 'open';
try { fs.readFileSync(0); stdin = 'empty'; } catch { stdin = 'closed'; }
fs.writeFileSync(${JSON.stringify(out)}, JSON.stringify({ args: process.argv.slice(2), profile: process.env.PROFILE, info: JSON.parse(process.env.KUBERNETES_EXEC_INFO), stdin }));
process.stdout.write(JSON.stringify({ apiVersion: '${V1}', kind: 'ExecCredential', status: { token: 'from-plugin' } }));`,
    );
    const c = cfg({ command, args: ['--x', 'y'], env: [{ name: 'PROFILE', value: 'dev' }] });
    const src = execCredentialSource(c, { server: 'https://k' });
    expect(await src.get({ timeoutMs: 10_000 })).toEqual({ token: 'from-plugin' });
    const seen = JSON.parse(readFileSync(out, 'utf8'));
    expect(seen).toMatchObject({
      args: ['--x', 'y'],
      profile: 'dev',
      info: { kind: 'ExecCredential', spec: { interactive: false } },
    });
    expect(seen.stdin).not.toBe('open');
  });

  it('one line for: not found (with the install hint), a failing exit, a silent plugin', async () => {
    const hint = 'Install it:\n  brew install get-token\n';
    await expect(
      runPlugin(cfg({ command: 'annex-no-such-plugin', installHint: hint }), '{}', 5000),
    ).rejects.toThrow(
      'exec plugin "annex-no-such-plugin" not found: Install it: brew install get-token',
    );
    const failing = script(
      'fail.js',
      `process.stderr.write('warming up\\nerror: profile "dev" has no credentials\\n'); process.exit(3);`,
    );
    await expect(runPlugin(cfg({ command: failing }), '{}', 5000)).rejects.toThrow(
      `exec plugin "${failing}" failed with exit code 3: error: profile "dev" has no credentials`,
    );
    const silent = script('silent.js', 'setInterval(() => {}, 1000);');
    const late = lateness();
    const started = Date.now();
    await expect(runPlugin(cfg({ command: silent }), '{}', 300)).rejects.toThrow(
      `exec plugin "${silent}" gave no credential within 0.3 s`,
    );
    // This process's timers running late on a busy machine aside.
    expect(Date.now() - started - late.ms()).toBeLessThan(3000);
    late.stop();
  });
});
