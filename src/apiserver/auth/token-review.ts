// Bearer tokens are the kube-apiserver's to judge: a TokenReview per token, the answer
// (yes or no) cached briefly. The cache key is a SHA-256 of the token, so no token is
// ever held as a map key or written anywhere.
import { createHash } from 'node:crypto';
import type { KubeClient } from '../../kube/client.js';
import { TtlCache } from './cache.js';
import { withRetry } from './retry.js';
import type { UserInfo } from './types.js';

interface TokenReview {
  status?: {
    authenticated?: boolean;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
    error?: string;
  };
}

export interface TokenReviewerOptions {
  successTtlMs?: number;
  failureTtlMs?: number;
  audiences?: string[];
  retryInitialMs?: number;
}

export class TokenReviewer {
  private readonly cache = new TtlCache<UserInfo | null>();
  private readonly inFlight = new Map<string, Promise<UserInfo | null>>();

  constructor(
    private readonly client: KubeClient,
    private readonly opts: TokenReviewerOptions = {},
  ) {}

  /** The token's user, or null when the API server says it is not valid. Throws if it cannot ask. */
  review(token: string): Promise<UserInfo | null> {
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.cache.get(key);
    if (cached !== undefined) return Promise.resolve(cached);
    // Concurrent requests with one token share one review.
    let p = this.inFlight.get(key);
    if (!p) {
      p = this.ask(token)
        .then((user) => {
          const ttl = user ? this.opts.successTtlMs : this.opts.failureTtlMs;
          this.cache.set(key, user, ttl ?? 10_000);
          return user;
        })
        .finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, p);
    }
    return p;
  }

  private async ask(token: string): Promise<UserInfo | null> {
    const review = await withRetry(
      () =>
        this.client.create<TokenReview>('/apis/authentication.k8s.io/v1/tokenreviews', {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, ...(this.opts.audiences ? { audiences: this.opts.audiences } : {}) },
        }),
      { initialMs: this.opts.retryInitialMs },
    );
    const s = review?.status;
    if (!s?.authenticated || !s.user?.username) return null;
    return {
      name: s.user.username,
      ...(s.user.uid ? { uid: s.user.uid } : {}),
      groups: s.user.groups ?? [],
      extra: s.user.extra ?? {},
    };
  }
}
