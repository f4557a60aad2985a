// Counting outside an ExternalMetric's namespace is done for its author only. annex lists
// with its own ServiceAccount, so before each count elsewhere it asks the API server — a
// SubjectAccessReview for the author recorded at admission (author.ts), cached 10 s like
// any other — whether that user may list those objects there. No recorded author: no count.
import type { AccessReviewer } from '../apiserver/auth/subject-access-review.js';
import { AUTHOR_ANNOTATION, authorOf } from './author.js';
import { SourceError, type CountCheck } from './sources.js';
import type { ExternalMetric, ObjectsSource } from './types.js';

const groupVersion = (src: ObjectsSource): [group: string, version: string] => {
  const slash = src.apiVersion.indexOf('/');
  return slash < 0
    ? ['', src.apiVersion]
    : [src.apiVersion.slice(0, slash), src.apiVersion.slice(slash + 1)];
};

/** `pods in all namespaces`, `jobs.batch in namespace shop`. */
function countedText(src: ObjectsSource, namespace: string): string {
  const [group] = groupVersion(src);
  const where = namespace === '*' ? 'all namespaces' : `namespace ${namespace}`;
  return `${src.resource}${group ? `.${group}` : ''} in ${where}`;
}

export function countCheck(
  reviewer: Pick<AccessReviewer, 'review'> | null,
  metric: Pick<ExternalMetric, 'metadata'>,
): CountCheck {
  const author = authorOf(metric);
  const own = metric.metadata.namespace;
  return async (src, namespace) => {
    const what = countedText(src, namespace);
    if (!author) {
      throw new SourceError(
        'unauthorized',
        `counting ${what} needs an author who may list them, and none is recorded (annotation ${AUTHOR_ANNOTATION}, written by annex's webhook when an ExternalMetric is created or its spec changes)`,
      );
    }
    if (!reviewer)
      throw new SourceError('kube', `no API server to ask whether counting ${what} is allowed`);
    const [group, version] = groupVersion(src);
    let allowed: boolean;
    try {
      ({ allowed } = await reviewer.review({
        user: author.username,
        ...(author.uid ? { uid: author.uid } : {}),
        groups: author.groups,
        ...(author.extra ? { extra: author.extra } : {}),
        resourceAttributes: {
          namespace: namespace === '*' ? '' : namespace,
          verb: 'list',
          group,
          version,
          resource: src.resource,
          subresource: '',
          name: '',
        },
      }));
    } catch (e) {
      throw new SourceError(
        'kube',
        `could not ask the API server whether ${JSON.stringify(author.username)} may list ${what}: ${(e as Error).message.split('\n')[0]}`,
      );
    }
    if (!allowed) {
      throw new SourceError(
        'unauthorized',
        `user ${JSON.stringify(author.username)} (who wrote this ExternalMetric's spec) may not list ${what}: annex counts outside namespace ${own} only what the author may list`,
      );
    }
  };
}
