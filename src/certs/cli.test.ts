// Tests for src/cli/certs.ts (kept here, in the folder this module owns).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { certsGenerate, certsInject, certsInspect, register, type Io } from '../cli/certs.js';
import { UserError } from '../errors.js';
import { createCa } from './issue.js';

let dir: string;
let out: string[];
let err: string[];
let io: Io;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'annex-cli-'));
  out = [];
  err = [];
  io = { out: (t) => out.push(t), err: (t) => err.push(t) };
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const flags = (extra: object = {}) => ({
  service: 'annex',
  namespace: 'annex-system',
  out: join(dir, 'certs'),
  ...extra,
});

describe('annex certs generate', () => {
  it('prints only the caBundle on stdout and what it did on stderr', async () => {
    const r = await certsGenerate(flags(), io);
    expect(out).toEqual([r.caBundle]);
    expect(err[0]).toMatch(/^issued CA "CN=annex-ca@\d+" \(ca\.crt missing\), expires /);
    expect(err[1]).toMatch(/^issued serving certificate for annex\.annex-system\.svc \(new CA\), expires 20/);
    err = [];
    out = [];
    const again = await certsGenerate(flags(), io);
    expect(out).toEqual([r.caBundle]);
    expect(again.issuedLeaf).toBe(false);
    expect(err[0]).toMatch(/^reused CA/);
    expect(err[1]).toMatch(/^reused serving certificate for annex\.annex-system\.svc, expires/);
  });

  it('names the bad flag', async () => {
    await expect(certsGenerate(flags({ service: 'Bad_Name' }), io)).rejects.toThrow(UserError);
    await expect(certsGenerate(flags({ service: 'Bad_Name' }), io)).rejects.toThrow(
      /^--service must be an RFC 1123 label/,
    );
    await expect(certsGenerate(flags({ namespace: '-x' }), io)).rejects.toThrow(/^--namespace /);
    await expect(certsGenerate(flags({ ip: ['localhost'] }), io)).rejects.toThrow(/^--ip must be/);
    await expect(certsGenerate(flags({ dns: ['UPPER.case'] }), io)).rejects.toThrow(/^--dns must be/);
    const file = join(dir, 'file');
    await writeFile(file, '');
    await expect(certsGenerate(flags({ out: join(file, 'sub') }), io)).rejects.toThrow(
      new RegExp(`^cannot create certificate directory ${join(file, 'sub')}`),
    );
  });

  it('is wired into commander with variadic --dns/--ip and numeric --renew-before', async () => {
    const program = new Command('annex').exitOverride();
    register(program);
    let stdoutCalls: string[] = [];
    let stderrCalls: string[] = [];
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      await program.parseAsync(
        ['certs', 'generate', '--service', 's', '--namespace', 'n', '--out', join(dir, 'c'),
          '--dns', 'a.example', 'b.example', '--ip', '10.0.0.1', '--renew-before', '7'],
        { from: 'user' },
      );
    } finally {
      stdoutCalls = stdout.mock.calls.map((c) => String(c[0]));
      stderrCalls = stderr.mock.calls.map((c) => String(c[0]));
      stdout.mockRestore(); // also clears mock.calls
      stderr.mockRestore();
    }
    // The spies may also see the test runner's own writes: pick ours out.
    const printed = stdoutCalls.filter((t) => /^[A-Za-z0-9+/=]+\n$/.test(t));
    expect(printed).toHaveLength(1);
    expect(Buffer.from(printed[0]!, 'base64').toString()).toMatch(/^-----BEGIN CERTIFICATE-----/);
    const sans = stderrCalls.find((t) => t.startsWith('SANs: '));
    expect(sans).toContain('a.example, b.example, s, s.n, s.n.svc, s.n.svc.cluster.local, 10.0.0.1;');
    await expect(
      program.parseAsync(['certs', 'generate', '--service', 's', '--namespace', 'n', '--out', join(dir, 'x'), '--renew-before', 'x'], {
        from: 'user',
      }),
    ).rejects.toThrow(/--renew-before must be a whole number of days/);
  });
});

describe('annex certs inspect', () => {
  it('describes both certificates and reports a good chain', async () => {
    await certsGenerate(flags(), io);
    out = [];
    certsInspect(join(dir, 'certs'), io);
    const text = out.join('\n');
    expect(text).toContain('subject:    CN=annex.annex-system.svc');
    expect(text).toContain('SANs:       annex, annex.annex-system, annex.annex-system.svc');
    expect(text).toMatch(/notAfter: +\S+ \(36[45] days left\)/);
    expect(text).toMatch(/chain: OK/);
  });

  it('fails when tls.crt is not signed by ca.crt', async () => {
    await certsGenerate(flags(), io);
    const other = await createCa();
    await writeFile(join(dir, 'certs', 'ca.crt'), other.certPem);
    expect(() => certsInspect(join(dir, 'certs'), io)).toThrow(/do not verify \(1 problem above\)/);
    expect(out.join('\n')).toContain('problem: tls.crt is not signed by ca.crt');
  });

  it('fails on an empty folder, naming the files', () => {
    expect(() => certsInspect(dir, io)).toThrow(UserError);
    expect(out.join('\n')).toContain(`problem: ${join(dir, 'ca.crt')}: file not found`);
  });
});

describe('annex certs inject', () => {
  it('needs a target and a readable CA file', async () => {
    await expect(certsInject({ kubeconfig: 'k', caFile: 'x' }, io)).rejects.toThrow(/nothing to inject/);
    await expect(
      certsInject({ kubeconfig: 'k', caFile: join(dir, 'none.crt'), apiservice: ['a'] }, io),
    ).rejects.toThrow(`--ca-file ${join(dir, 'none.crt')}: file not found`);
    await writeFile(join(dir, 'bad.crt'), 'x');
    await expect(
      certsInject({ kubeconfig: 'k', caFile: join(dir, 'bad.crt'), apiservice: ['a'] }, io),
    ).rejects.toThrow(/not a PEM certificate/);
  });
});

const mainJs = join(import.meta.dirname, '../../dist/cli/main.js');
describe.runIf(existsSync(mainJs))('annex certs (built CLI)', () => {
  it('`$(annex certs generate …)` captures just the caBundle', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      mainJs, 'certs', 'generate', '--service', 'annex', '--namespace', 'annex-system', '--out', join(dir, 'c'),
    ]);
    expect(Buffer.from(stdout.trim(), 'base64').toString()).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });
});
