// What the policy webhooks read and the controller keeps current. The admission path
// only reads it, so a review never waits on a watch or a write.
import type { RuleWithOperations } from '../admission/webhook.js';
import type { KubeClient } from '../kube/client.js';
import type { CompiledPolicy } from './compile.js';
import { PolicySet } from './engine.js';
import { ExceptionSet } from './exceptions/match.js';
import { DEFAULT_ANNEX_NAMESPACE } from './match.js';

export interface PolicyState {
  /** Every AdmissionPolicy, compiled once per generation. */
  readonly set: PolicySet;
  /** The policies annex's webhook evaluates; the rest the API server enforces in CEL. */
  onWebhook: readonly CompiledPolicy[];
  /** What the API server must send annex: the union of onWebhook's rules (the webhooks' `rules`). */
  rules: readonly RuleWithOperations[];
  /** Every PolicyException, compiled: read by every evaluation (webhook and scans). */
  readonly exceptions: ExceptionSet;
  /** Namespace labels from the watch, for namespaceSelector (a review does not carry them). */
  readonly namespaceLabels: Map<string, Record<string, string>>;
  /** The API server; null without one (a laptop `npm start`). */
  kube: KubeClient | null;
}

export const policyState = (annexNamespace = DEFAULT_ANNEX_NAMESPACE): PolicyState => ({
  set: new PolicySet(),
  exceptions: new ExceptionSet(annexNamespace),
  onWebhook: [],
  rules: [],
  namespaceLabels: new Map(),
  kube: null,
});
