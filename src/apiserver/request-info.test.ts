import Koa from 'koa';
import { describe, expect, it } from 'vitest';
import { parseRequestInfo, requestInfoMiddleware, type RequestInfo } from './request-info.js';

const pick = (i: RequestInfo) => ({
  isResourceRequest: i.isResourceRequest,
  verb: i.verb,
  apiGroup: i.apiGroup,
  apiVersion: i.apiVersion,
  namespace: i.namespace,
  resource: i.resource,
  subresource: i.subresource,
  name: i.name,
});

describe('parseRequestInfo', () => {
  it.each([
    ['GET', '/apis', '', { isResourceRequest: false, verb: 'get' }],
    ['GET', '/apis/metrics.annex.dev', '', { isResourceRequest: false, verb: 'get' }],
    ['GET', '/apis/metrics.annex.dev/v1beta1', '', { isResourceRequest: false, verb: 'get' }],
    ['POST', '/openapi/v2', '', { isResourceRequest: false, verb: 'post' }],
    ['GET', '/livez', '', { isResourceRequest: false, verb: 'get' }],
  ])('%s %s is a non-resource request', (method, path, q, want) => {
    const i = parseRequestInfo(method, path, q);
    expect({ isResourceRequest: i.isResourceRequest, verb: i.verb }).toEqual(want);
    expect(i.resource).toBe('');
  });

  it('parses a namespaced get', () => {
    expect(
      pick(parseRequestInfo('GET', '/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/p')),
    ).toEqual({
      isResourceRequest: true,
      verb: 'get',
      apiGroup: 'metrics.k8s.io',
      apiVersion: 'v1beta1',
      namespace: 'ns',
      resource: 'pods',
      subresource: '',
      name: 'p',
    });
  });

  it.each([
    ['GET', '/apis/g/v1/nodes', '', 'list'],
    ['GET', '/apis/g/v1/nodes', 'watch=true', 'watch'],
    ['GET', '/apis/g/v1/nodes', 'watch=1', 'watch'],
    ['GET', '/apis/g/v1/nodes', 'watch=', 'watch'],
    ['GET', '/apis/g/v1/nodes', 'watch=false', 'list'],
    ['GET', '/apis/g/v1/nodes', 'watch=0', 'list'],
    ['HEAD', '/apis/g/v1/nodes/a', '', 'get'],
    ['POST', '/apis/g/v1/nodes', '', 'create'],
    ['PUT', '/apis/g/v1/nodes/a', '', 'update'],
    ['PATCH', '/apis/g/v1/nodes/a', '', 'patch'],
    ['DELETE', '/apis/g/v1/nodes/a', '', 'delete'],
    ['DELETE', '/apis/g/v1/nodes', '', 'deletecollection'],
    ['GET', '/apis/g/v1/watch/nodes', '', 'watch'],
    ['OPTIONS', '/apis/g/v1/nodes', '', ''],
  ])('%s %s?%s → %s', (method, path, q, verb) => {
    expect(parseRequestInfo(method, path, q).verb).toBe(verb);
  });

  it('reads subresources, the namespace object itself and the core /api prefix', () => {
    const sub = parseRequestInfo('GET', '/apis/g/v1/namespaces/ns/pods/p/status/extra');
    expect([sub.resource, sub.name, sub.subresource, sub.parts]).toEqual([
      'pods',
      'p',
      'status',
      ['pods', 'p', 'status', 'extra'],
    ]);
    const ns = parseRequestInfo('GET', '/api/v1/namespaces/ns');
    expect(pick(ns)).toMatchObject({
      apiGroup: '',
      apiVersion: 'v1',
      resource: 'namespaces',
      name: 'ns',
      namespace: 'ns',
    });
    const fin = parseRequestInfo('PUT', '/api/v1/namespaces/ns/finalize');
    expect([fin.resource, fin.name, fin.subresource]).toEqual(['namespaces', 'ns', 'finalize']);
    const all = parseRequestInfo('GET', '/apis/g/v1/pods');
    expect([all.namespace, all.resource, all.verb]).toEqual(['', 'pods', 'list']);
  });

  it('takes the name from a metadata.name field selector for list and watch', () => {
    const i = parseRequestInfo(
      'GET',
      '/apis/g/v1/namespaces/ns/pods',
      'fieldSelector=metadata.name%3Dweb&watch=1&labelSelector=a+in+(b)',
    );
    expect([i.verb, i.name, i.fieldSelector, i.labelSelector]).toEqual([
      'watch',
      'web',
      'metadata.name=web',
      'a in (b)',
    ]);
    expect(
      parseRequestInfo('GET', '/apis/g/v1/pods', 'fieldSelector=metadata.name!%3Dweb').name,
    ).toBe('');
    expect(parseRequestInfo('GET', '/apis/g/v1/pods', 'fieldSelector=bad').name).toBe('');
    expect(parseRequestInfo('GET', '/apis/g/v1/pods/x', 'labelSelector=a').labelSelector).toBe('');
  });

  it('decodes percent-escapes in the path', () => {
    expect(parseRequestInfo('GET', '/apis/g/v1/nodes/a%3Ab').name).toBe('a:b');
  });

  it('middleware stores the info on ctx.state', async () => {
    const app = new Koa();
    const seen: RequestInfo[] = [];
    const mw = requestInfoMiddleware();
    const ctx = app.createContext(
      Object.assign(Object.create(null), {
        method: 'GET',
        url: '/apis/g/v1/nodes?watch=true',
        headers: {},
        socket: {},
      }),
      Object.create(null),
    );
    await mw(ctx, async () => {
      seen.push(ctx.state.requestInfo as RequestInfo);
    });
    expect(seen[0]?.verb).toBe('watch');
  });
});
