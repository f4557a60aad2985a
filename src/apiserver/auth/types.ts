// The identity authentication puts on ctx.state.user and authorization reads, shaped like
// k8s.io/apiserver's user.Info (and TokenReview's / SubjectAccessReview's user fields).

export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

export const ANONYMOUS: UserInfo = {
  name: 'system:anonymous',
  groups: ['system:unauthenticated'],
  extra: {},
};

/** Always added to an authenticated user, as group.NewAuthenticatedGroupAdder does. */
export const AUTHENTICATED_GROUP = 'system:authenticated';
export const MASTERS_GROUP = 'system:masters';

/** Probe paths k8s.io/apiserver always allows (DelegatingAuthorizationOptions defaults). */
export const ALWAYS_ALLOW_PATHS: readonly string[] = ['/healthz', '/readyz', '/livez'];
