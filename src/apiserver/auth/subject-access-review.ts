// May this user do this? The kube-apiserver answers (RBAC and whatever else it runs),
// through a SubjectAccessReview; allow and deny are both cached for a short while, keyed
// on the whole spec as k8s.io/apiserver's webhook authorizer keys them.
import type { KubeClient } from '../../kube/client.js';
import { TtlCache } from './cache.js';
import { withRetry } from './retry.js';

export interface ResourceAttributes {
  namespace: string;
  verb: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  name: string;
}

export interface NonResourceAttributes {
  path: string;
  verb: string;
}

export interface SubjectAccessReviewSpec {
  user: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
  resourceAttributes?: ResourceAttributes;
  nonResourceAttributes?: NonResourceAttributes;
}

export interface AccessDecision {
  allowed: boolean;
  reason: string;
}

interface SubjectAccessReview {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

export interface AccessReviewerOptions {
  allowedTtlMs?: number;
  deniedTtlMs?: number;
  retryInitialMs?: number;
}

/** Specs longer than this are not cached (apiserver's shouldCache uses the same bound). */
const MAX_CACHED_KEY = 10_000;

export class AccessReviewer {
  private readonly cache = new TtlCache<AccessDecision>();
  /** How many reviews went to the API server (cache misses); for tests and metrics. */
  calls = 0;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: AccessReviewerOptions = {},
  ) {}

  /** The decision; throws when the API server cannot be asked (callers must deny). */
  async review(spec: SubjectAccessReviewSpec): Promise<AccessDecision> {
    const key = JSON.stringify(spec);
    const cached = this.cache.get(key);
    if (cached) return cached;
    this.calls++;
    const sar = await withRetry(
      () =>
        this.client.create<SubjectAccessReview>(
          '/apis/authorization.k8s.io/v1/subjectaccessreviews',
          { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
        ),
      { initialMs: this.opts.retryInitialMs },
    );
    const s = sar?.status ?? {};
    // "denied" wins over "allowed", as in the webhook authorizer.
    const decision: AccessDecision = { allowed: !!s.allowed && !s.denied, reason: s.reason ?? '' };
    if (key.length <= MAX_CACHED_KEY) {
      const ttl = decision.allowed ? this.opts.allowedTtlMs : this.opts.deniedTtlMs;
      this.cache.set(key, decision, ttl ?? 10_000);
    }
    return decision;
  }
}
