// May the authenticated user do what the request asks? As k8s.io/apiserver's delegating
// authorizer: system:masters and the probe paths always; anything else by a
// SubjectAccessReview built from the RequestInfo. No answer means no, never allow: a 500
// InternalError Status, as k8s.io/apiserver's WithAuthorization answers when its
// authorizer errs (the caller may well be allowed; a 403 would send them chasing RBAC).
import type Koa from 'koa';
import type { Logger } from '../../log.js';
import { requestInfoOf, type RequestInfo } from '../request-info.js';
import {
  forbidden,
  forbiddenPath,
  internalError,
  unauthorized,
  type StatusError,
} from '../../core/status.js';
import type { AccessReviewer, SubjectAccessReviewSpec } from './subject-access-review.js';
import { ALWAYS_ALLOW_PATHS, MASTERS_GROUP, type UserInfo } from './types.js';

export interface AuthorizeOptions {
  reviewer: Pick<AccessReviewer, 'review'>;
  log: Logger;
  alwaysAllowPaths?: readonly string[];
  alwaysAllowGroups?: readonly string[];
}

/** The 500 message (after "Internal error occurred: ") when the SubjectAccessReview itself failed. */
export const REVIEW_FAILED_REASON = 'the SubjectAccessReview could not be completed';

/** The SubjectAccessReview spec kube-apiserver would send for this user and request. */
export function accessReviewSpec(user: UserInfo, info: RequestInfo): SubjectAccessReviewSpec {
  const extraKeys = Object.keys(user.extra).sort();
  const spec: SubjectAccessReviewSpec = {
    user: user.name,
    ...(user.uid ? { uid: user.uid } : {}),
    groups: user.groups,
    ...(extraKeys.length
      ? { extra: Object.fromEntries(extraKeys.map((k) => [k, user.extra[k]!])) }
      : {}),
  };
  if (info.isResourceRequest) {
    spec.resourceAttributes = {
      namespace: info.namespace,
      verb: info.verb,
      group: info.apiGroup,
      version: info.apiVersion,
      resource: info.resource,
      subresource: info.subresource,
      name: info.name,
    };
  } else {
    spec.nonResourceAttributes = { path: info.path, verb: info.verb };
  }
  return spec;
}

export function denial(user: UserInfo, info: RequestInfo, reason: string): StatusError {
  if (!info.isResourceRequest) return forbiddenPath(user.name, info.verb, info.path, reason);
  return forbidden(
    user.name,
    info.verb,
    info.resource,
    info.apiGroup,
    { namespace: info.namespace, name: info.name, subresource: info.subresource },
    reason,
  );
}

export function authorize(opts: AuthorizeOptions): Koa.Middleware {
  const allowPaths = new Set(opts.alwaysAllowPaths ?? ALWAYS_ALLOW_PATHS);
  const allowGroups = opts.alwaysAllowGroups ?? [MASTERS_GROUP];
  return async (ctx, next) => {
    const user = ctx.state.user as UserInfo | undefined;
    if (!user) throw unauthorized(); // authenticate() did not run: fail closed
    const info = requestInfoOf(ctx);
    if (!info.isResourceRequest && allowPaths.has(info.path)) return next();
    if (user.groups.some((g) => allowGroups.includes(g))) return next();

    let decision;
    try {
      decision = await opts.reviewer.review(accessReviewSpec(user, info));
    } catch (e) {
      opts.log.error(
        { path: info.path, verb: info.verb, error: (e as Error).message },
        'SubjectAccessReview failed; denying',
      );
      throw internalError(REVIEW_FAILED_REASON);
    }
    if (!decision.allowed) throw denial(user, info, decision.reason);
    await next();
  };
}
