import type Koa from 'koa';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { KubeClient } from '../../kube/client.js';
import { KubeApiError } from '../../kube/errors.js';
import { parseRequestInfo } from '../request-info.js';
import { StatusError } from '../../core/status.js';
import { accessReviewSpec, authorize, REVIEW_FAILED_REASON } from './authorize.js';
import { AccessReviewer, type SubjectAccessReviewSpec } from './subject-access-review.js';
import type { UserInfo } from './types.js';

const jane: UserInfo = {
  name: 'jane',
  groups: ['system:authenticated'],
  extra: { b: ['2'], a: ['1'] },
};
const info = (method: string, path: string, q = '') => parseRequestInfo(method, path, q);

describe('accessReviewSpec', () => {
  it('carries resource attributes for resource requests', () => {
    expect(
      accessReviewSpec(jane, info('GET', '/apis/metrics.annex.dev/v1beta1/namespaces/ns/pods/p')),
    ).toEqual({
      user: 'jane',
      groups: ['system:authenticated'],
      extra: { a: ['1'], b: ['2'] },
      resourceAttributes: {
        namespace: 'ns',
        verb: 'get',
        group: 'metrics.annex.dev',
        version: 'v1beta1',
        resource: 'pods',
        subresource: '',
        name: 'p',
      },
    });
  });

  it('carries path and verb for discovery and other non-resource paths', () => {
    const s = accessReviewSpec(
      { ...jane, uid: 'u', extra: {} },
      info('GET', '/apis/metrics.annex.dev/v1beta1'),
    );
    expect(s).toEqual({
      user: 'jane',
      uid: 'u',
      groups: ['system:authenticated'],
      nonResourceAttributes: { path: '/apis/metrics.annex.dev/v1beta1', verb: 'get' },
    });
  });
});

async function run(mw: Koa.Middleware, method: string, path: string, user?: UserInfo, query = '') {
  const ctx = { method, path, querystring: query, state: { user } };
  let reached = false;
  try {
    await mw(ctx as unknown as Koa.Context, async () => {
      reached = true;
    });
  } catch (e) {
    if (e instanceof StatusError) return e.status;
    throw e;
  }
  return reached ? 'allowed' : 'stopped';
}

describe('authorize', () => {
  const log = pino({ level: 'silent' });
  const asked: SubjectAccessReviewSpec[] = [];
  const reviewer = {
    review: async (spec: SubjectAccessReviewSpec) => {
      asked.push(spec);
      if (spec.user === 'broken') throw new Error('connect ECONNREFUSED');
      return { allowed: spec.user === 'alice', reason: spec.user === 'alice' ? '' : '' };
    },
  };
  const mw = authorize({ reviewer, log });

  it("denies with Kubernetes' Forbidden message, resource and non-resource", async () => {
    expect(
      await run(mw, 'GET', '/apis/metrics.annex.dev/v1beta1/namespaces/default/pods', jane),
    ).toMatchObject({
      code: 403,
      reason: 'Forbidden',
      message:
        'pods.metrics.annex.dev is forbidden: User "jane" cannot list resource "pods" in API group "metrics.annex.dev" in the namespace "default"',
      details: { group: 'metrics.annex.dev', kind: 'pods' },
    });
    expect(
      await run(mw, 'GET', '/apis/metrics.annex.dev/v1beta1/nodes/n1/status', jane),
    ).toMatchObject({
      message:
        'nodes.metrics.annex.dev "n1" is forbidden: User "jane" cannot get resource "nodes/status" in API group "metrics.annex.dev" at the cluster scope',
    });
    expect(await run(mw, 'GET', '/openapi/v2', jane)).toMatchObject({
      code: 403,
      message: 'forbidden: User "jane" cannot get path "/openapi/v2"',
    });
  });

  it('allows what the review allows, masters and probe paths without asking', async () => {
    const alice = { name: 'alice', groups: [], extra: {} };
    expect(await run(mw, 'GET', '/apis/metrics.annex.dev/v1beta1/nodes', alice)).toBe('allowed');
    const before = asked.length;
    const root = { name: 'root', groups: ['system:masters'], extra: {} };
    expect(await run(mw, 'DELETE', '/apis/metrics.annex.dev/v1beta1/nodes', root)).toBe('allowed');
    expect(
      await run(mw, 'GET', '/livez', { name: 'system:anonymous', groups: [], extra: {} }),
    ).toBe('allowed');
    expect(asked.length).toBe(before);
  });

  it('refuses with a 500 when the review fails (as k8s.io/apiserver), and 401 when nobody authenticated', async () => {
    const broken = { name: 'broken', groups: [], extra: {} };
    expect(await run(mw, 'GET', '/apis/metrics.annex.dev/v1beta1/nodes', broken)).toMatchObject({
      code: 500,
      reason: 'InternalError',
      message: `Internal error occurred: ${REVIEW_FAILED_REASON}`,
    });
    expect(await run(mw, 'GET', '/apis/metrics.annex.dev/v1beta1/nodes')).toMatchObject({
      code: 401,
    });
  });
});

describe('AccessReviewer', () => {
  it('caches allow and deny per spec, not errors, and lets denied win', async () => {
    let calls = 0;
    let fail = false;
    const client = {
      create: async (_path: string, body: { spec: SubjectAccessReviewSpec }) => {
        calls++;
        if (fail)
          throw new KubeApiError('POST', '/x', { code: 403, reason: 'Forbidden', message: 'no' });
        return { status: { allowed: true, denied: body.spec.user === 'mallory' } };
      },
    } as unknown as KubeClient;
    const r = new AccessReviewer(client, {
      allowedTtlMs: 60_000,
      deniedTtlMs: 60_000,
      retryInitialMs: 1,
    });
    const spec = (user: string) => ({
      user,
      groups: [],
      nonResourceAttributes: { path: '/x', verb: 'get' },
    });
    expect(await r.review(spec('bob'))).toEqual({ allowed: true, reason: '' });
    expect(await r.review(spec('bob'))).toEqual({ allowed: true, reason: '' });
    expect(await r.review(spec('mallory'))).toEqual({ allowed: false, reason: '' });
    expect(await r.review(spec('mallory'))).toEqual({ allowed: false, reason: '' });
    expect(calls).toBe(2);
    fail = true;
    await expect(r.review(spec('carol'))).rejects.toThrow('403 Forbidden');
    await expect(r.review(spec('carol'))).rejects.toThrow('403 Forbidden');
    expect(calls).toBe(4); // 403 is not retried, and failures are not cached
  });
});
