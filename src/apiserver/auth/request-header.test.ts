import { describe, expect, it } from 'vitest';
import { identityFromHeaders, stripIdentityHeaders } from './request-header.js';

const cfg = {
  usernameHeaders: ['X-Remote-User', 'X-Other-User'],
  uidHeaders: ['X-Remote-Uid'],
  groupHeaders: ['X-Remote-Group'],
  extraHeaderPrefixes: ['X-Remote-Extra-'],
};

describe('identityFromHeaders', () => {
  it('takes the first non-empty user header, every group value and url-decoded extra keys', () => {
    const raw = [
      'x-remote-user',
      '',
      'X-Other-User',
      'jane',
      'X-Remote-Uid',
      'u-1',
      'X-Remote-Group',
      'a',
      'x-remote-group',
      '',
      'X-Remote-Group',
      'b,c',
      'X-Remote-Extra-Authentication.Kubernetes.Io%2fPod-Name',
      'p1',
      'X-Remote-Extra-authentication.kubernetes.io%2fpod-name',
      'p2',
      'X-Remote-Extra-Bad%zz',
      'v',
    ];
    expect(identityFromHeaders(raw, cfg)).toEqual({
      name: 'jane',
      uid: 'u-1',
      groups: ['a', 'b,c'],
      extra: { 'authentication.kubernetes.io/pod-name': ['p1', 'p2'], 'bad%zz': ['v'] },
    });
  });

  it('abstains without a user name', () => {
    expect(identityFromHeaders(['X-Remote-Group', 'system:masters'], cfg)).toBeUndefined();
  });
});

describe('stripIdentityHeaders', () => {
  it('removes configured and default identity headers, nothing else', () => {
    const h = {
      'x-remote-user': 'a',
      'x-other-user': 'b',
      'x-remote-group': 'g',
      'x-remote-extra-k': 'v',
      'x-remote-uid': 'u',
      'x-remote-userx': 'kept',
      accept: 'application/json',
    };
    stripIdentityHeaders(h, cfg);
    expect(h).toEqual({ 'x-remote-userx': 'kept', accept: 'application/json' });
    const d = { 'x-remote-user': 'a', 'x-remote-extra-scopes': 's', host: 'h' };
    stripIdentityHeaders(d);
    expect(d).toEqual({ host: 'h' });
  });
});
