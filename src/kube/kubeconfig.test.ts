import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  defaultCredentials,
  fileToken,
  inCluster,
  KubeconfigError,
  parseKubeconfig,
} from './kubeconfig.js';

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
    expect(c.token).toBeUndefined();
    expect(c.source).toBe('/k/config');
  });

  it('reads files relative to the kubeconfig directory, and an explicit context', () => {
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
    expect(other.token?.()).toBe('other-token');
  });

  it('uses a token, or a token file that is re-read after the refresh interval', () => {
    expect(parseKubeconfig(kubeconfig({ token: 'abc' }), 'f').token?.()).toBe('abc');
    const files = { '/k/tok': 'one\n' };
    const c = parseKubeconfig(kubeconfig({ tokenFile: 'tok' }), '/k/config', {
      readFile: disk(files),
      tokenRefreshMs: 0,
    });
    expect(c.token?.()).toBe('one');
    files['/k/tok'] = 'two';
    expect(c.token?.()).toBe('two');
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
    expect(err(kubeconfig({ exec: { command: 'aws' } }))).toBe(
      '/k/config: user "u1": "exec" credentials are not supported; use a client certificate or a token',
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
});

describe('inCluster', () => {
  const dir = '/sa';
  it('builds the service URL and re-reads the rotating token', () => {
    const files = { '/sa/token': 'first', '/sa/ca.crt': 'CA' };
    const c = inCluster({
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      dir,
      readFile: disk(files),
      tokenRefreshMs: 0,
    });
    expect(c.server).toBe('https://[fd00::1]:443');
    expect(c.ca?.toString()).toBe('CA');
    expect(c.token?.()).toBe('first');
    files['/sa/token'] = 'second';
    expect(c.token?.()).toBe('second');
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

describe('fileToken', () => {
  it('keeps the last good token when a re-read fails, and waits for the interval', () => {
    let now = 0;
    const files: Record<string, string> = { '/t': 'a' };
    const tok = fileToken('/t', { readFile: disk(files), refreshMs: 1000, now: () => now });
    files['/t'] = 'b';
    now = 999;
    expect(tok()).toBe('a');
    now = 1000;
    expect(tok()).toBe('b');
    delete files['/t'];
    now = 5000;
    expect(tok()).toBe('b');
  });
});

describe('defaultCredentials', () => {
  it('reports the file it tried', () => {
    expect(() => defaultCredentials({ env: { KUBECONFIG: '/nope/config' } })).toThrow(
      'cannot read kubeconfig "/nope/config" (ENOENT)',
    );
  });
});
