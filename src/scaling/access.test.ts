import { describe, expect, it } from 'vitest';
import type { SubjectAccessReviewSpec } from '../apiserver/auth/subject-access-review.js';
import { countCheck } from './access.js';
import { AUTHOR_ANNOTATION } from './author.js';

const AUTHOR =
  '{"username":"jane","uid":"u-1","groups":["dev","system:authenticated"],"extra":{"scopes":["a"]}}';
const metric = (annotation?: string) => ({
  metadata: {
    name: 'm',
    namespace: 'shop',
    ...(annotation ? { annotations: { [AUTHOR_ANNOTATION]: annotation } } : {}),
  },
});

describe('countCheck', () => {
  const asked: SubjectAccessReviewSpec[] = [];
  const reviewer = (allowed: boolean) => ({
    review: async (spec: SubjectAccessReviewSpec) => {
      asked.push(spec);
      return { allowed, reason: '' };
    },
  });
  const jobs = { apiVersion: 'batch/v1', resource: 'jobs' };
  const pods = { apiVersion: 'v1', resource: 'pods' };

  it('asks the API server as the author: list, the group and version, every namespace as ""', async () => {
    await countCheck(reviewer(true), metric(AUTHOR))(jobs, '*');
    await countCheck(reviewer(true), metric(AUTHOR))(pods, 'bank');
    expect(asked).toEqual([
      {
        user: 'jane',
        uid: 'u-1',
        groups: ['dev', 'system:authenticated'],
        extra: { scopes: ['a'] },
        resourceAttributes: {
          namespace: '',
          verb: 'list',
          group: 'batch',
          version: 'v1',
          resource: 'jobs',
          subresource: '',
          name: '',
        },
      },
      expect.objectContaining({
        resourceAttributes: expect.objectContaining({
          namespace: 'bank',
          group: '',
          version: 'v1',
        }),
      }),
    ]);
  });

  it('refuses with the reason: the author may not, or no author is recorded', async () => {
    await expect(countCheck(reviewer(false), metric(AUTHOR))(jobs, '*')).rejects.toMatchObject({
      reason: 'unauthorized',
      message:
        'user "jane" (who wrote this ExternalMetric\'s spec) may not list jobs.batch in all namespaces: annex counts outside namespace shop only what the author may list',
    });
    const before = asked.length;
    await expect(countCheck(reviewer(true), metric())(pods, 'bank')).rejects.toMatchObject({
      reason: 'unauthorized',
      message: expect.stringMatching(
        /^counting pods in namespace bank needs an author who may list them, and none is recorded/,
      ),
    });
    await expect(
      countCheck(reviewer(true), metric('{"user":"x"}'))(pods, '*'),
    ).rejects.toMatchObject({
      reason: 'unauthorized',
    });
    expect(asked).toHaveLength(before);
  });

  it('fails (never allows) when the API server cannot answer', async () => {
    const down = { review: () => Promise.reject(new Error('connect ECONNREFUSED\nmore')) };
    await expect(countCheck(down, metric(AUTHOR))(pods, '*')).rejects.toMatchObject({
      reason: 'kube',
      message:
        'could not ask the API server whether "jane" may list pods in all namespaces: connect ECONNREFUSED',
    });
  });
});
