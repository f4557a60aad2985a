// The policy feature's configuration section, `policy:` at the top of annex's configuration
// file (a key reserved for it; a user feature's is `featureConfig.<name>`).
// src/config/schema.ts places it in the root schema; docs/configuration.md renders it.
import { declareConfig, filledIn } from '../core/config.js';

/** AdmissionPolicies (policy.annex.dev) and the decision log (audit.annex.dev). */
export interface PolicyConfig {
  /** Serve AdmissionPolicies (policy.annex.dev): webhooks, Events, the decision log. */
  enabled: boolean;
  /** Without an API server, the policies are read from this folder. */
  directory: string;
  /** reportingInstance of Events and `replica` of decisions; empty = the host (Pod) name. */
  instance: string;
  /** Write events.k8s.io Events for Deny, Warn and Audit decisions. */
  events: boolean;
  /**
   * Hand every policy that compiles to CEL (and has no Audit action, which the decision log
   * records) to the API server as a ValidatingAdmissionPolicy / MutatingAdmissionPolicy;
   * the rest stay on annex's webhook.
   */
  native: boolean;
  /** The AdmissionEvents (kubectl get admissionevents) each replica keeps. */
  decisionLog: {
    /** AdmissionEvents kept in memory by each replica; the oldest are dropped. */
    maxEntries: number;
    /** Other replicas' base URLs (https://host:port), read when listing decisions. */
    peers: string[];
    /** Find the other replicas from the EndpointSlices of tls.service in tls.namespace. */
    discoverPeers: boolean;
    /** How long one peer may take to answer before its decisions are left out. */
    peerTimeoutMs: number;
  };
  /** Background scans of existing objects, served as PolicyReports (wgpolicyk8s.io). */
  reports: {
    /**
     * Scan the objects every policy matches (list+watch of those kinds: RBAC must allow
     * it) and serve the results as PolicyReport / ClusterPolicyReport, from memory.
     */
    enabled: boolean;
    /** Every cached object is evaluated again this often, whatever changed. */
    resyncSeconds: number;
  };
}

export const policyConfig = declareConfig<PolicyConfig>({
  type: 'object',
  additionalProperties: false,
  required: ['enabled', 'directory', 'instance', 'events', 'native', 'decisionLog', 'reports'],
  properties: {
    enabled: { type: 'boolean', default: false },
    directory: { type: 'string', minLength: 1, default: 'policies' },
    instance: { type: 'string', maxLength: 128, default: '' },
    events: { type: 'boolean', default: true },
    native: { type: 'boolean', default: true },
    decisionLog: {
      type: 'object',
      additionalProperties: false,
      required: ['maxEntries', 'peers', 'discoverPeers', 'peerTimeoutMs'],
      default: filledIn<PolicyConfig['decisionLog']>(),
      properties: {
        maxEntries: { type: 'integer', minimum: 1, default: 1000 },
        peers: { type: 'array', items: { type: 'string', pattern: '^https://' }, default: [] },
        discoverPeers: { type: 'boolean', default: false },
        peerTimeoutMs: { type: 'integer', minimum: 1, default: 2000 },
      },
    },
    reports: {
      type: 'object',
      additionalProperties: false,
      required: ['enabled', 'resyncSeconds'],
      default: filledIn<PolicyConfig['reports']>(),
      properties: {
        enabled: { type: 'boolean', default: false },
        resyncSeconds: { type: 'integer', minimum: 10, default: 300 },
      },
    },
  },
});
