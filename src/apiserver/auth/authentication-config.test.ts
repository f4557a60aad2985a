import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { opensslSelfSigned } from '../../devcluster/pki.js';
import type { KubeClient } from '../../kube/client.js';
import { AuthenticationConfigSource, parseAuthenticationConfig } from './authentication-config.js';

// One real self-signed certificate, made by openssl.
const caDir = mkdtempSync(join(tmpdir(), 'annex-authcfg-'));
const CA = opensslSelfSigned(caDir, 'ca', { cn: 'test-ca' }).cert;
rmSync(caDir, { recursive: true, force: true });

const FULL = {
  'client-ca-file': CA,
  'requestheader-client-ca-file': `${CA}\n${CA}`,
  'requestheader-allowed-names': '["front-proxy-client"]',
  'requestheader-username-headers': '["X-Remote-User"]',
  'requestheader-uid-headers': '[]',
  'requestheader-group-headers': '["X-Remote-Group"]',
  'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
};

describe('parseAuthenticationConfig', () => {
  it('reads both CA bundles and the JSON-array keys', () => {
    const c = parseAuthenticationConfig(FULL);
    expect(c.clientCA?.certs).toHaveLength(1);
    expect(c.requestHeader?.ca.certs).toHaveLength(2);
    expect(c.requestHeader).toMatchObject({
      allowedNames: ['front-proxy-client'],
      usernameHeaders: ['X-Remote-User'],
      uidHeaders: [],
      groupHeaders: ['X-Remote-Group'],
      extraHeaderPrefixes: ['X-Remote-Extra-'],
    });
  });

  it('has no front-proxy trust when the requestheader CA is absent', () => {
    expect(parseAuthenticationConfig({ 'client-ca-file': CA }).requestHeader).toBeUndefined();
    expect(parseAuthenticationConfig({})).toEqual({});
  });

  it('rejects malformed arrays and bundles with the key in the message', () => {
    expect(() =>
      parseAuthenticationConfig({ ...FULL, 'requestheader-allowed-names': 'front-proxy-client' }),
    ).toThrow(
      'extension-apiserver-authentication: "requestheader-allowed-names" is not a JSON array',
    );
    expect(() =>
      parseAuthenticationConfig({ ...FULL, 'requestheader-group-headers': '[1]' }),
    ).toThrow('"requestheader-group-headers" is not a JSON array of strings');
    expect(() => parseAuthenticationConfig({ 'client-ca-file': 'garbage' })).toThrow(
      '"client-ca-file" holds no PEM certificate',
    );
  });
});

describe('AuthenticationConfigSource', () => {
  it('notifies on a changed content only, and keeps the last good config on a bad one', () => {
    const src = new AuthenticationConfigSource({} as KubeClient, pino({ level: 'silent' }));
    const seen: number[] = [];
    src.onChange((c) => seen.push(c.requestHeader?.ca.certs.length ?? 0));
    src.setData(FULL);
    src.setData({ ...FULL });
    expect(seen).toEqual([2]);
    expect(src.clientCAs()).toEqual([FULL['requestheader-client-ca-file'], CA]);
    src.setData({ ...FULL, 'requestheader-allowed-names': '{' });
    expect(seen).toEqual([2]);
    expect(src.current().requestHeader?.allowedNames).toEqual(['front-proxy-client']);
    src.setData({ 'client-ca-file': CA });
    expect(seen).toEqual([2, 0]);
    expect(src.clientCAs()).toEqual([CA]);
  });
});
