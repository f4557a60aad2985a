// Authentication and authorization delegated to the kube-apiserver, the way
// k8s.io/apiserver does it for metrics-server and every other aggregated API server.
import type Koa from 'koa';
import type { KubeClient } from '../../kube/client.js';
import type { Logger } from '../../log.js';
import { authenticate } from './authenticate.js';
import { AuthenticationConfigSource } from './authentication-config.js';
import { authorize } from './authorize.js';
import { AccessReviewer } from './subject-access-review.js';
import { TokenReviewer } from './token-review.js';
import { ALWAYS_ALLOW_PATHS } from './types.js';

export { AuthenticationConfigSource, type AuthenticationConfig } from './authentication-config.js';
export { ANONYMOUS, AUTHENTICATED_GROUP, type UserInfo } from './types.js';

export interface DelegatedAuthOptions {
  client: KubeClient;
  log: Logger;
  /** TTL of TokenReview and SubjectAccessReview answers, allow and deny alike (default 10 s). */
  cacheTtlMs?: number;
  alwaysAllowPaths?: readonly string[];
}

export interface DelegatedAuth {
  authenticate: Koa.Middleware;
  authorize: Koa.Middleware;
  config: AuthenticationConfigSource;
  tokens: TokenReviewer;
  access: AccessReviewer;
  /** Reads kube-system/extension-apiserver-authentication (rejects if it cannot) and watches it. */
  start(): Promise<void>;
  stop(): void;
}

export function delegatedAuth(opts: DelegatedAuthOptions): DelegatedAuth {
  const ttl = opts.cacheTtlMs ?? 10_000;
  const alwaysAllowPaths = opts.alwaysAllowPaths ?? ALWAYS_ALLOW_PATHS;
  const config = new AuthenticationConfigSource(opts.client, opts.log);
  const tokens = new TokenReviewer(opts.client, { successTtlMs: ttl, failureTtlMs: ttl });
  const access = new AccessReviewer(opts.client, { allowedTtlMs: ttl, deniedTtlMs: ttl });
  return {
    authenticate: authenticate({ config, tokens, log: opts.log, alwaysAllowPaths }),
    authorize: authorize({ reviewer: access, log: opts.log, alwaysAllowPaths }),
    config,
    tokens,
    access,
    start: () => config.start(),
    stop: () => config.stop(),
  };
}
