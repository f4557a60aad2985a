// The webhook half of the Feature contract: what an admission webhook declares (its handler
// and its registrations) and what its handler is given and returns. The declaring helpers
// (validatingWebhook, mutatingWebhook), the matching and the review envelope live in
// src/admission/, which builds on these.
import type { Status } from './status.js';
import type { KubeObject } from './types.js';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: Operation;
  userInfo?: {
    username?: string;
    uid?: string;
    groups?: string[];
    extra?: Record<string, string[]>;
  };
  object?: KubeObject | null;
  oldObject?: KubeObject | null;
  dryRun?: boolean;
}

/** What a webhook decides, before annex puts it into the AdmissionReview response. */
export type Verdict =
  | {
      allowed: true;
      /** the mutated object; a JSON Patch is computed from it */ object?: KubeObject;
      warnings?: string[];
    }
  | { allowed: false; status: Status; warnings?: string[] };

export interface RuleWithOperations {
  operations: (Operation | '*')[];
  apiGroups: string[];
  apiVersions: string[];
  // Plural resource names: "*" for all resources, "*/*" with subresources, "pods/status".
  resources: string[];
  scope?: 'Cluster' | 'Namespaced' | '*';
}

/** metav1.LabelSelector, as webhook configurations write it. */
export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }[];
}

/** One entry of the configuration's `webhooks:` list. Defaults are admissionregistration/v1's, except failurePolicy. */
export interface Registration {
  /** Fully qualified webhook name, e.g. "names.annex.dev". */
  name: string;
  rules: RuleWithOperations[];
  /** Fail (the default) or Ignore: also what annex answers when the handler throws or overruns. */
  failurePolicy?: 'Fail' | 'Ignore';
  /** 1–30; default 10. */
  timeoutSeconds?: number;
  matchPolicy?: 'Equivalent' | 'Exact';
  sideEffects?: 'None' | 'NoneOnDryRun';
  namespaceSelector?: LabelSelectorSpec;
  objectSelector?: LabelSelectorSpec;
  /** Mutating webhooks only. */
  reinvocationPolicy?: 'Never' | 'IfNeeded';
}

/** What annex knows of one AdmissionReview besides its request: its deadline and its caller. */
export interface ReviewContext {
  /** Aborted when the API server's deadline for this review (`?timeout=`, less a margin) passes. */
  signal: AbortSignal;
  /** That deadline on performance.now()'s clock, for synchronous work: it cannot see `signal` abort. */
  deadline: number;
  /**
   * The caller presented a client certificate from `admission.clientCA`: the kube-apiserver,
   * given one by its AdmissionConfiguration. Otherwise anyone who reaches annex's port may
   * have sent this review, with any userInfo and object: answer it, but record nothing.
   */
  authenticated: boolean;
}

export type Admit = (request: AdmissionRequest, ctx: ReviewContext) => Verdict | Promise<Verdict>;

export interface Webhook {
  /**
   * Short name (the first label of the declared one): logs, metrics, file names and the
   * default configuration name. Not the URL path: that is the whole declared name
   * (`webhookPath`), so two webhooks sharing a first label are not served at one path.
   */
  name: string;
  type: 'validating' | 'mutating';
  /** Name of the webhook configuration object (default `annex-<name>`). */
  configuration: string;
  /** Rendered as the comment above the configuration. */
  description?: string;
  registrations: Registration[];
  /**
   * The install registers it before annex runs (its placeholder in manifests/registrations.yaml
   * keeps the rules, without a caBundle), so until annex answers, every write it matches is
   * refused by its failurePolicy instead of admitted unseen: for a webhook whose record annex
   * later trusts (ExternalMetric authors).
   */
  enforcedBeforeReady?: boolean;
  admit: Admit;
}

/** A webhook's declared, fully qualified name ("lb-guard.example.com"). */
export const declaredName = (w: Pick<Webhook, 'name' | 'registrations'>): string =>
  w.registrations[0]?.name ?? w.name;

/**
 * Where a webhook is served: /validate/<declared name> or /mutate/<declared name>, e.g.
 * /validate/pinned-images.example.com. The whole name, not its first label, so distinct
 * names are distinct paths; a declared name is a DNS subdomain, so it needs no escaping.
 */
export const webhookPath = (w: Pick<Webhook, 'type' | 'name' | 'registrations'>): string =>
  `/${w.type === 'mutating' ? 'mutate' : 'validate'}/${declaredName(w)}`;
