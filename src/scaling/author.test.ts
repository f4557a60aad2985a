import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../admission/review.js';
import { matchingRegistration } from '../admission/webhook.js';
import { AUTHOR_ANNOTATION, authorOf, authorWebhook } from './author.js';
import type { ExternalMetric } from './types.js';

const webhook = authorWebhook();
const jane = { username: 'jane', uid: 'u-1', groups: ['dev', 'system:authenticated'] };
const admin = { username: 'admin', groups: ['system:masters'], extra: { b: ['2'], a: ['1'] } };
const JANE = '{"username":"jane","uid":"u-1","groups":["dev","system:authenticated"]}';
const ADMIN = '{"username":"admin","groups":["system:masters"],"extra":{"a":["1"],"b":["2"]}}';

const em = (spec: object, annotations?: Record<string, string>): ExternalMetric => ({
  apiVersion: 'metrics.annex.dev/v1alpha1',
  kind: 'ExternalMetric',
  metadata: { name: 'm', namespace: 'shop', ...(annotations ? { annotations } : {}) },
  spec,
});

const request = (
  operation: 'CREATE' | 'UPDATE',
  userInfo: AdmissionRequest['userInfo'],
  object: ExternalMetric,
  oldObject?: ExternalMetric,
): AdmissionRequest => ({
  uid: '1',
  kind: { group: 'metrics.annex.dev', version: 'v1alpha1', kind: 'ExternalMetric' },
  resource: { group: 'metrics.annex.dev', version: 'v1alpha1', resource: 'externalmetrics' },
  namespace: 'shop',
  operation,
  ...(userInfo ? { userInfo } : {}),
  object,
  ...(oldObject ? { oldObject } : {}),
});

/** The annotation the stored object ends with (undefined: none). */
async function recorded(req: AdmissionRequest): Promise<string | undefined> {
  const v = await webhook.admit(req, {
    signal: new AbortController().signal,
    deadline: Infinity,
    authenticated: true,
  });
  expect(v.allowed).toBe(true);
  const o = ('object' in v && v.object) || req.object!;
  return o.metadata.annotations?.[AUTHOR_ANNOTATION];
}

const count = { objects: { apiVersion: 'v1', resource: 'pods', namespace: '*' } };
const other = { objects: { apiVersion: 'v1', resource: 'secrets', namespace: '*' } };

describe('the ExternalMetric author webhook', () => {
  it('is a mutating webhook on create and update of externalmetrics, not /status, failing closed everywhere', () => {
    expect(webhook).toMatchObject({
      type: 'mutating',
      name: 'externalmetrics',
      configuration: 'annex-externalmetrics',
      enforcedBeforeReady: true,
    });
    expect(webhook.registrations).toEqual([
      expect.objectContaining({ failurePolicy: 'Fail', namespaceSelector: {} }),
    ]);
    const req = request('UPDATE', jane, em(count), em(count));
    expect(matchingRegistration(webhook, req)).toBeDefined();
    expect(matchingRegistration(webhook, { ...req, subResource: 'status' })).toBeUndefined();
    expect(matchingRegistration(webhook, { ...req, operation: 'DELETE' })).toBeUndefined();
  });

  it('records the creator, overwriting whatever annotation the request carried', async () => {
    expect(await recorded(request('CREATE', jane, em(count)))).toBe(JANE);
    expect(await recorded(request('CREATE', jane, em(count, { [AUTHOR_ANNOTATION]: ADMIN })))).toBe(
      JANE,
    );
    expect(await recorded(request('CREATE', admin, em(count)))).toBe(ADMIN);
  });

  it('makes whoever changes the spec the author', async () => {
    const stored = em(count, { [AUTHOR_ANNOTATION]: ADMIN });
    expect(
      await recorded(request('UPDATE', jane, em(other, { [AUTHOR_ANNOTATION]: ADMIN }), stored)),
    ).toBe(JANE);
  });

  it('keeps the author on an update that leaves the spec alone, whatever the request says', async () => {
    const stored = em(count, { [AUTHOR_ANNOTATION]: ADMIN });
    // Labels, finalizers, a garbage collector dropping an ownerReference: not a new author.
    const relabelled = { ...em(count, { [AUTHOR_ANNOTATION]: ADMIN }) };
    relabelled.metadata.labels = { team: 'a' };
    expect(await recorded(request('UPDATE', jane, relabelled, stored))).toBe(ADMIN);
    // Nor can the annotation be edited, or removed, by hand.
    expect(
      await recorded(request('UPDATE', jane, em(count, { [AUTHOR_ANNOTATION]: JANE }), stored)),
    ).toBe(ADMIN);
    expect(await recorded(request('UPDATE', jane, em(count), stored))).toBe(ADMIN);
    // An object stored without an author stays without one.
    expect(
      await recorded(
        request('UPDATE', admin, em(count, { [AUTHOR_ANNOTATION]: ADMIN }), em(count)),
      ),
    ).toBeUndefined();
  });

  it('records nobody when the API server names no user', async () => {
    expect(
      await recorded(request('CREATE', undefined, em(count, { [AUTHOR_ANNOTATION]: ADMIN }))),
    ).toBeUndefined();
  });
});

describe('authorOf', () => {
  it('reads a record, and nothing that is not one', () => {
    expect(authorOf(em(count, { [AUTHOR_ANNOTATION]: ADMIN }))).toEqual({
      username: 'admin',
      groups: ['system:masters'],
      extra: { a: ['1'], b: ['2'] },
    });
    for (const bad of [
      'admin',
      '{}',
      '{"username":"","groups":[]}',
      '{"username":"a","groups":"system:masters"}',
      '{"username":"a","groups":[],"uid":1}',
      '{"username":"a","groups":[],"extra":{"k":"v"}}',
    ]) {
      expect(authorOf(em(count, { [AUTHOR_ANNOTATION]: bad })), bad).toBeUndefined();
    }
    expect(authorOf(em(count))).toBeUndefined();
  });
});
