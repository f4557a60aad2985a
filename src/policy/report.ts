// Policy reports in the community's shape, wgpolicyk8s.io/v1alpha2 PolicyReport (one per
// namespace) and ClusterPolicyReport (cluster-scoped objects): what `kubectl get
// policyreports`, Kyverno's tooling and Policy Reporter read today. openreports.io is the
// successor, but nothing a user has installed reads it yet everywhere, and its kinds are
// the same shape: a second group later is a declaration, not a rewrite. Built from the
// scan's results (pure), served from memory by annex's aggregated API: never etcd.
import { resource } from '../apiserver/resource.js';
import type { GroupVersionDecl, KubeObject, Provider, TableColumn } from '../core/types.js';
import type { ResultValue, RuleResult } from './scan.js';

export const REPORT_GROUP = 'wgpolicyk8s.io';
export const REPORT_VERSION = 'v1alpha2';
/** Where annex serves the same reports when another owner serves wgpolicyk8s.io (Kyverno's CRDs). */
export const FALLBACK_REPORT_GROUP = 'reports.annex.dev';
/** The name of annex's report in each namespace, and of its cluster report. */
export const REPORT_NAME = 'annex-policies';
export const REPORT_SOURCE = 'annex';

/** The object a result is about. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

/** One object's results, and when they last changed (each result's timestamp). */
export interface ObjectResults {
  object: ObjectRef;
  results: RuleResult[];
  /** Seconds since the epoch. */
  timestamp: number;
}

export type Summary = Record<ResultValue, number>;

export interface PolicyReport extends KubeObject {
  apiVersion: string;
  kind: 'PolicyReport' | 'ClusterPolicyReport';
  summary: Summary;
  results: {
    source: string;
    policy: string;
    rule: string;
    result: ResultValue;
    message?: string;
    scored: boolean;
    timestamp: { seconds: number; nanos: number };
    resources: ObjectRef[];
  }[];
}

export function summarize(results: readonly { result: ResultValue }[]): Summary {
  const s: Summary = { pass: 0, fail: 0, warn: 0, error: 0, skip: 0 };
  for (const r of results) s[r.result]++;
  return s;
}

const refKey = (o: ObjectRef) => `${o.apiVersion}/${o.kind}/${o.namespace ?? ''}/${o.name}`;

/**
 * The report of one namespace ('' = the cluster report): every object's results, ordered
 * by object then policy then rule, so equal inputs give an equal report (the store then
 * emits nothing). `created` is the report's creationTimestamp (AGE).
 */
export function buildReport(
  namespace: string,
  objects: readonly ObjectResults[],
  created: string,
  group = REPORT_GROUP,
): PolicyReport {
  const sorted = [...objects].sort((a, b) => (refKey(a.object) < refKey(b.object) ? -1 : 1));
  const results = sorted.flatMap((o) =>
    o.results.map((r) => ({
      source: REPORT_SOURCE,
      policy: r.policy,
      rule: r.rule,
      result: r.result,
      ...(r.message ? { message: r.message } : {}),
      ...(r.exception ? { properties: { exception: r.exception } } : {}),
      scored: true,
      timestamp: { seconds: o.timestamp, nanos: 0 },
      resources: [o.object],
    })),
  );
  return {
    apiVersion: `${group}/${REPORT_VERSION}`,
    kind: namespace ? 'PolicyReport' : 'ClusterPolicyReport',
    metadata: {
      name: REPORT_NAME,
      ...(namespace ? { namespace } : {}),
      creationTimestamp: created,
      labels: { 'app.kubernetes.io/managed-by': 'annex' },
    },
    summary: summarize(results),
    results,
  };
}

const COUNT = (what: string) => ({ type: 'integer', description: `Results that ${what}.` });

const fields = {
  summary: {
    type: 'object',
    description: 'How many results of each kind the report holds.',
    properties: {
      pass: COUNT('passed'),
      fail: COUNT('failed (a Deny or Audit policy)'),
      warn: COUNT('failed a Warn-only policy'),
      error: COUNT('could not be evaluated'),
      skip: COUNT('were not evaluated (matchConditions not met, or a PolicyException)'),
    },
  },
  results: {
    type: 'array',
    description: 'One result per object and policy rule.',
    items: {
      type: 'object',
      properties: {
        source: { type: 'string', description: 'Always annex.' },
        policy: { type: 'string', description: 'The AdmissionPolicy.' },
        rule: { type: 'string', description: 'The rule of the policy.' },
        result: { type: 'string', enum: ['pass', 'fail', 'warn', 'error', 'skip'] },
        message: { type: 'string', description: 'What the rule reported (bounded).' },
        properties: {
          type: 'object',
          description: 'exception: the PolicyException (namespace/name) of a skip it caused.',
          additionalProperties: { type: 'string' },
        },
        scored: { type: 'boolean' },
        timestamp: {
          type: 'object',
          properties: { seconds: { type: 'integer' }, nanos: { type: 'integer' } },
        },
        resources: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              namespace: { type: 'string' },
              name: { type: 'string' },
              uid: { type: 'string' },
            },
          },
        },
      },
    },
  },
};

/** Kyverno's printer columns: PASS FAIL WARN ERROR SKIP AGE, counts as integers, AGE as an age. */
const COLUMNS = {
  Pass: '$.summary.pass',
  Fail: '$.summary.fail',
  Warn: '$.summary.warn',
  Error: '$.summary.error',
  Skip: '$.summary.skip',
  Age: '$.metadata.creationTimestamp',
};
const typed = (c: TableColumn): TableColumn => ({
  ...c,
  type: c.name === 'Age' ? 'date' : 'integer',
});

/** The two kinds of `group`, each over its provider (namespaced reports, the cluster report). */
export function policyReportGroup(
  providers: { namespaced: Provider; cluster: Provider },
  group: string,
  shared: boolean,
): GroupVersionDecl {
  const kinds = (['PolicyReport', 'ClusterPolicyReport'] as const).map((kind) => {
    const namespaced = kind === 'PolicyReport';
    const decl = resource({
      kind,
      ...(namespaced ? { shortNames: ['polr'] } : { shortNames: ['cpolr'] }),
      namespaced,
      description: namespaced
        ? "annex's background scan of one namespace: every object's result for every AdmissionPolicy rule matching it, computed from annex's caches (not stored in etcd)."
        : "annex's background scan of cluster-scoped objects: every object's result for every AdmissionPolicy rule matching it (not stored in etcd).",
      fields,
      columns: COLUMNS,
      provider: namespaced ? providers.namespaced : providers.cluster,
    });
    return { ...decl, columns: decl.columns.map(typed) };
  });
  return {
    group,
    versions: [REPORT_VERSION],
    resources: kinds,
    apiService: {
      // As a CRD's APIService (1000), so kubectl's `policyreports` means wgpolicyk8s.io;
      // annex's own group (100) is reached by its full name.
      groupPriorityMinimum: shared ? 1000 : 100,
      ...(shared ? { shared: true } : {}),
      description: `annex policy reports (background scans of existing objects): kubectl get policyreports${shared ? '' : `.${group}`} -A.`,
    },
  };
}
