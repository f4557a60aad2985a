import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import {
  credentialsFor,
  defaultCredentials,
  inCluster,
  KubeconfigError,
  loadKubeconfigList,
  mergeKubeconfigs,
  parseKubeconfig,
  resolveCredentials,
  type KubeCredentials,
} from './kubeconfig.js';

/** The bearer token the client would send now. */
const tokenOf = async (c: KubeCredentials) => (await c.auth?.get({ timeoutMs: 1000 }))?.token;

const b64 = (s: string) => Buffer.from(s).toString('base64');

function kubeconfig(user: Record<string, unknown>, cluster: Record<string, unknown> = {}) {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'dev',
    contexts: [
      { name: 'other', context: { cluster: 'c2', user: 'u2' } },
      { name: 'dev', context: { cluster: 'c1', user: 'u1' } },
    ],
    clusters: [
      { name: 'c1', cluster: { server: 'https://127.0.0.1:6443/', ...cluster } },
      { name: 'c2', cluster: { server: 'https://10.0.0.1' } },
    ],
    users: [
      { name: 'u1', user },
      { name: 'u2', user: { token: 'other-token' } },
    ],
  });
}

/** A fake disk: known paths only, ENOENT otherwise. */
function disk(files: Record<string, string>) {
  return (p: string) => {
    if (!(p in files)) throw Object.assign(new Error(`no ${p}`), { code: 'ENOENT' });
    return Buffer.from(files[p]!);
  };
}

describe('parseKubeconfig', () => {
  it('takes server, CA data and client cert/key data from the current context', () => {
    const c = parseKubeconfig(
      kubeconfig(
        { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
        { 'certificate-authority-data': b64('CA') },
      ),
      '/k/config',
    );
    expect(c.server).toBe('https://127.0.0.1:6443');
    expect(c.ca?.toString()).toBe('CA');
    expect(c.cert?.toString()).toBe('CERT');
    expect(c.key?.toString()).toBe('KEY');
    expect(c.auth).toBeUndefined();
    expect(c.source).toBe('/k/config');
  });

  it('reads files relative to the kubeconfig directory, and an explicit context', async () => {
    const read = disk({ '/k/ca.crt': 'CA-FILE', '/abs/u.crt': 'C', '/k/sub/u.key': 'K' });
    const c = parseKubeconfig(
      kubeconfig(
        { 'client-certificate': '/abs/u.crt', 'client-key': 'sub/u.key' },
        { 'certificate-authority': 'ca.crt' },
      ),
      '/k/config',
      { readFile: read },
    );
    expect([c.ca?.toString(), c.cert?.toString(), c.key?.toString()]).toEqual([
      'CA-FILE',
      'C',
      'K',
    ]);
    const other = parseKubeconfig(kubeconfig({ token: 't' }), '/k/config', { context: 'other' });
    expect(other.server).toBe('https://10.0.0.1');
    expect(await tokenOf(other)).toBe('other-token');
  });

  it('uses a token, or a token file that is re-read after the refresh interval', async () => {
    expect(await tokenOf(parseKubeconfig(kubeconfig({ token: 'abc' }), 'f'))).toBe('abc');
    const files = { '/k/tok': 'one\n' };
    const c = parseKubeconfig(kubeconfig({ tokenFile: 'tok' }), '/k/config', {
      readFile: disk(files),
      tokenRefreshMs: 0,
    });
    expect(await tokenOf(c)).toBe('one');
    files['/k/tok'] = 'two';
    expect(await tokenOf(c)).toBe('two');
  });

  it('names the file and the missing field', () => {
    const err = (text: string, opts = {}) => {
      try {
        parseKubeconfig(text, '/k/config', opts);
      } catch (e) {
        expect(e).toBeInstanceOf(KubeconfigError);
        return (e as Error).message;
      }
      throw new Error('expected an error');
    };
    expect(err(stringify({ contexts: [] }))).toBe('/k/config: "current-context" is not set');
    expect(err(kubeconfig({ token: 't' }), { context: 'nope' })).toBe(
      '/k/config: context "nope" not found in "contexts"',
    );
    expect(err(kubeconfig({ token: 't' }, { server: undefined }))).toBe(
      '/k/config: cluster "c1" has no "server"',
    );
    expect(err(kubeconfig({ token: 't' }, { server: 'http://x' }))).toBe(
      '/k/config: cluster "c1": "server" must be https (got http:)',
    );
    expect(err(kubeconfig({ 'client-certificate-data': b64('C') }))).toBe(
      '/k/config: user "u1" has a client certificate but no "client-key"',
    );
    expect(err(kubeconfig({}))).toMatch(/^\/k\/config: user "u1" has no credentials/);
    expect(err(kubeconfig({ 'auth-provider': { name: 'gcp' } }))).toBe(
      '/k/config: user "u1": "auth-provider" credentials are not supported; use a client certificate, a token or an exec plugin',
    );
    expect(
      err(kubeconfig({ exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'x' } })),
    ).toBe(
      '/k/config: user "u1": exec: "interactiveMode" must be specified for client.authentication.k8s.io/v1',
    );
    expect(
      err(kubeconfig({ token: 't' }, { 'certificate-authority': 'missing.crt' }), {
        readFile: disk({}),
      }),
    ).toBe('/k/config: cluster "c1": cannot read certificate-authority "/k/missing.crt" (ENOENT)');
    expect(err('a: [b')).toMatch(/^\/k\/config: not valid YAML/);
  });

  it('keeps insecure-skip-tls-verify and tls-server-name', () => {
    const c = parseKubeconfig(
      kubeconfig(
        { token: 't' },
        { 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes' },
      ),
      'f',
    );
    expect(c.insecureSkipTlsVerify).toBe(true);
    expect(c.tlsServerName).toBe('kubernetes');
  });

  it('writes no YAML warning to stderr for an unknown tag or directive (fuzz seed)', () => {
    // Was a Node warning per oddity: a line outside annex's JSON logs, quoting the file.
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const text = `%FOO bar\n---\n${kubeconfig({ token: '!!js/function t' }).replace("token: '!!js/function t'", 'token: !!js/function t')}`;
      expect(parseKubeconfig(text, 'f').server).toBe('https://127.0.0.1:6443');
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });
});

describe('inCluster', () => {
  const dir = '/sa';
  it('builds the service URL and re-reads the rotating token', async () => {
    const files = { '/sa/token': 'first', '/sa/ca.crt': 'CA' };
    const c = inCluster({
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      dir,
      readFile: disk(files),
      tokenRefreshMs: 0,
    });
    expect(c.server).toBe('https://[fd00::1]:443');
    expect(c.ca?.toString()).toBe('CA');
    expect(await tokenOf(c)).toBe('first');
    files['/sa/token'] = 'second';
    expect(await tokenOf(c)).toBe('second');
  });

  it('explains what is missing', () => {
    expect(() => inCluster({ env: {}, dir, readFile: disk({}) })).toThrow(
      /KUBERNETES_SERVICE_HOST/,
    );
    expect(() =>
      inCluster({
        env: { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' },
        dir,
        readFile: disk({}),
      }),
    ).toThrow('in-cluster: cannot read "/sa/ca.crt" (ENOENT)');
  });
});

describe('exec users', () => {
  const exec = {
    apiVersion: 'client.authentication.k8s.io/v1beta1',
    command: './bin/get-token',
    args: ['--cluster', 'c1'],
    env: [{ name: 'PROFILE', value: 'dev' }],
    provideClusterInfo: true,
  };

  it('makes an exec credential source; a static token or certificate wins over it', () => {
    const c = parseKubeconfig(kubeconfig({ exec }), '/k/config');
    expect(c.auth).toBeDefined();
    expect(c.cert).toBeUndefined();
    // client-go skips the plugin when the kubeconfig names a token itself.
    const both = parseKubeconfig(kubeconfig({ exec, token: 'static' }), '/k/config');
    return expect(tokenOf(both)).resolves.toBe('static');
  });
});

/** Two kubeconfig files as $KUBECONFIG would list them. */
const first = {
  'current-context': 'a',
  contexts: [
    { name: 'a', context: { cluster: 'shared', user: 'ua' } },
    { name: 'b', context: { cluster: 'only-first', user: 'ub' } },
  ],
  clusters: [
    { name: 'shared', cluster: { server: 'https://first', 'certificate-authority': 'ca.crt' } },
    { name: 'only-first', cluster: { server: 'https://only-first' } },
  ],
  users: [{ name: 'ua', user: { token: 'first-ua' } }],
};
const second = {
  'current-context': 'b',
  contexts: [
    { name: 'a', context: { cluster: 'ignored', user: 'ignored' } },
    { name: 'c', context: { cluster: 'shared', user: 'uc' } },
  ],
  clusters: [{ name: 'shared', cluster: { server: 'https://second' } }],
  users: [
    { name: 'ua', user: { token: 'second-ua' } },
    { name: 'ub', user: { tokenFile: 'ub.token' } },
    { name: 'uc', user: { token: 'uc' } },
  ],
};

describe('mergeKubeconfigs (the $KUBECONFIG list)', () => {
  const files = { '/one/ca.crt': 'CA-ONE', '/two/ub.token': 'ub-token' };
  const merged = () =>
    mergeKubeconfigs([
      { file: '/one/config', text: stringify(first) },
      { file: '/two/config', text: '' }, // an empty file contributes nothing
      { file: '/two/other', text: stringify(second) },
    ]);

  it('takes current-context and every named entry from the first file that has it', async () => {
    const c = credentialsFor(merged(), { readFile: disk(files) });
    expect(c.context).toBe('a');
    expect(c.server).toBe('https://first');
    expect(c.ca?.toString()).toBe('CA-ONE');
    expect(await tokenOf(c)).toBe('first-ua');
    expect(c.source).toBe(['/one/config', '/two/config', '/two/other'].join(delimiter));
  });

  it('--context picks any context; entries may come from different files', async () => {
    const b = credentialsFor(merged(), { context: 'b', readFile: disk(files) });
    expect(b.server).toBe('https://only-first');
    // A relative path resolves against the file that defines the entry.
    expect(await tokenOf(b)).toBe('ub-token');
    const c = credentialsFor(merged(), { context: 'c', readFile: disk(files) });
    expect([c.server, await tokenOf(c)]).toEqual(['https://first', 'uc']);
  });

  it('names an unknown context and where it looked', () => {
    expect(() => credentialsFor(merged(), { context: 'nope' })).toThrow(
      new KubeconfigError(
        `${['/one/config', '/two/config', '/two/other'].join(delimiter)}: context "nope" not found in "contexts"`,
      ),
    );
    expect(() =>
      mergeKubeconfigs([{ file: '/x', text: stringify({ clusters: { a: 1 } }) }]),
    ).toThrow('/x: "clusters" is not a list');
  });
});

describe('resolveCredentials (where kubectl looks)', () => {
  const root = mkdtempSync(join(tmpdir(), 'annex-kubeconfig-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (rel: string, doc: unknown) => {
    const p = join(root, rel);
    mkdirSync(join(p, '..'), { recursive: true });
    writeFileSync(p, typeof doc === 'string' ? doc : stringify(doc));
    return p;
  };
  const one = write('one/config', first);
  write('one/ca.crt', 'CA');
  const two = write('two/config', second);
  write('two/ub.token', 'ub');
  const home = write('home/.kube/config', {
    'current-context': 'h',
    contexts: [{ name: 'h', context: { cluster: 'h' } }],
    clusters: [{ name: 'h', cluster: { server: 'https://home' } }],
  });
  const sa = join(root, 'sa');
  write('sa/token', 'sa-token');
  write('sa/ca.crt', 'SA-CA');
  const pod = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
  const missing = join(root, 'missing');
  const resolveWith = (env: NodeJS.ProcessEnv, more = {}) =>
    resolveCredentials({ env, serviceAccountDir: sa, ...more });

  it('--kubeconfig beats $KUBECONFIG, which beats ~/.kube/config, which beats in-cluster', () => {
    const KUBECONFIG = [missing, two, one].join(delimiter);
    const HOME = join(root, 'home');
    expect(resolveWith({ KUBECONFIG, HOME, ...pod }, { kubeconfig: one })?.server).toBe(
      'https://first',
    );
    // Missing list entries are skipped; the first existing file wins.
    const fromList = resolveWith({ KUBECONFIG, HOME, ...pod });
    expect([fromList?.server, fromList?.context]).toEqual(['https://only-first', 'b']);
    expect(resolveWith({ KUBECONFIG: `${delimiter}${delimiter}`, HOME, ...pod })?.server).toBe(
      'https://home',
    );
    expect(resolveWith({ HOME, ...pod })?.source).toBe(home);
    expect(resolveWith({ HOME: missing, ...pod })?.source).toBe('in-cluster');
    expect(resolveWith({ HOME: missing })).toBeNull();
  });

  it('annex serve skips ~/.kube/config but honours $KUBECONFIG and --context', () => {
    const HOME = join(root, 'home');
    expect(resolveWith({ HOME }, { defaultFile: false })).toBeNull();
    const c = resolveWith(
      { HOME, KUBECONFIG: [one, two].join(delimiter) },
      {
        defaultFile: false,
        context: 'c',
      },
    );
    expect(c?.server).toBe('https://first');
  });

  it('errors: no list entry exists; a context with in-cluster; nothing at all', () => {
    expect(() => resolveWith({ KUBECONFIG: [missing, `${missing}2`].join(delimiter) })).toThrow(
      `none of the files in $KUBECONFIG exists: ${missing}${delimiter}${missing}2`,
    );
    expect(() => resolveWith({ HOME: missing, ...pod }, { context: 'x' })).toThrow(
      /^context "x": no kubeconfig to find it in/,
    );
    expect(() => defaultCredentials({ env: { HOME: missing } })).toThrow(/^no cluster to talk to/);
    expect(() => defaultCredentials({ kubeconfig: missing })).toThrow(
      `cannot read kubeconfig "${missing}" (ENOENT)`,
    );
    expect(loadKubeconfigList(`${one}${delimiter}${one}`).source).toBe(one);
  });
});
