// Background scans, the pure part: one existing object against the compiled policies, as
// admission would see it — a CREATE (or, for a policy that takes only updates, an UPDATE
// of the object onto itself) through the same evaluate() the webhook calls, mutate rules
// first, in memory. Nothing is written anywhere. One result per matching policy × rule.
import { BUILT_IN_KINDS } from '../admission/kinds.js';
import type { AdmissionRequest } from '../admission/review.js';
import type { KubeObject } from '../core/types.js';
import type { CompiledPolicy } from './compile.js';
import { evaluate, type EvaluateContext } from './evaluate.js';
import { policyMatches } from './match.js';
import type { PolicyDecision } from './types.js';

/** What a scanned kind is: the resource listed and the kind a review would carry. */
export interface ScanKind {
  group: string;
  version: string;
  resource: string;
  kind: string;
}

export type ResultValue = 'pass' | 'fail' | 'warn' | 'error' | 'skip';

/** One policy rule's result on one object (a PolicyReport result, before the object reference). */
export interface RuleResult {
  policy: string;
  rule: string;
  result: ResultValue;
  message: string;
  /** `namespace/name` of the PolicyException that made it a skip. */
  exception?: string;
}

export const kindKey = (k: Pick<ScanKind, 'group' | 'version' | 'resource'>) =>
  `${k.group}/${k.version}/${k.resource}`;

const KIND_OF = new Map(
  Object.entries(BUILT_IN_KINDS).map(([kind, [group, version, resource]]) => [
    kindKey({ group, version, resource }),
    kind,
  ]),
);

/**
 * Secrets are never cached nor scanned: a failed rule's message quotes the value it judged,
 * and a report is read by whoever may read reports, not only by who may read the Secret.
 */
const NOT_SECRETS = 'Secrets are never scanned: a report would quote their values';

/**
 * The kinds these policies match that a scan can list: every rule's explicit
 * group/version/resource of a kind annex knows (match.kinds always are), Secrets aside.
 * Wildcards, subresources and resources of unknown kinds are returned apart, to be reported.
 */
export function scanKinds(policies: readonly CompiledPolicy[]): {
  kinds: ScanKind[];
  unscannable: string[];
} {
  const kinds = new Map<string, ScanKind>();
  const unscannable = new Set<string>();
  for (const p of policies) {
    if (!p.validate.length) continue;
    for (const r of p.match.rules) {
      if (!r.operations.some((o) => o === '*' || o === 'CREATE' || o === 'UPDATE')) continue;
      for (const group of r.apiGroups)
        for (const version of r.apiVersions)
          for (const resource of r.resources) {
            const key = kindKey({ group, version, resource });
            const kind = KIND_OF.get(key);
            if (kind === 'Secret') unscannable.add(`${p.name}: ${key} (${NOT_SECRETS})`);
            else if (kind) kinds.set(key, { group, version, resource, kind });
            else unscannable.add(`${p.name}: ${key}`);
          }
    }
  }
  return {
    kinds: [...kinds.values()].sort((a, b) => (kindKey(a) < kindKey(b) ? -1 : 1)),
    unscannable: [...unscannable].sort(),
  };
}

/** The review the API server would send for `object`, had it been created (or updated) now. */
export function scanRequest(
  k: ScanKind,
  object: KubeObject,
  operation: 'CREATE' | 'UPDATE',
): AdmissionRequest {
  const namespace = object.metadata.namespace;
  return {
    uid: `scan-${object.metadata.uid ?? object.metadata.name}`,
    kind: { group: k.group, version: k.version, kind: k.kind },
    resource: { group: k.group, version: k.version, resource: k.resource },
    name: object.metadata.name,
    ...(namespace ? { namespace } : {}),
    operation,
    userInfo: {},
    object,
    oldObject: operation === 'UPDATE' ? object : null,
  };
}

/** Most of a report's bytes are messages: one rule's causes, bounded. */
export const MAX_MESSAGE = 1024;

function messageOf(d: PolicyDecision): string {
  const text = d.causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join('; ');
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE - 1)}…` : text;
}

/** A skip's message: the exception named (its reason is on the exception, one `kubectl get` away). */
export const exemptedBy = (exception: string) => `exempted by PolicyException ${exception}`;

/** A cause from a rule that could not be evaluated (evaluate.ts internalError, out of time). */
const isError = (d: PolicyDecision) => d.causes.some((c) => c.message.startsWith('Internal error'));

/** The result a failed rule reports: Warn alone warns; Deny and Audit fail. */
function failed(d: PolicyDecision): ResultValue {
  if (isError(d)) return 'error';
  return d.action === 'Warn' ? 'warn' : 'fail';
}

/**
 * Every matching policy's validate rules on `object`, each policy evaluated alone (as
 * engine.decide does), in policy then rule order. A policy whose matchConditions do not
 * hold reports its rules `skip`.
 */
export function scanObject(
  policies: readonly CompiledPolicy[],
  k: ScanKind,
  object: KubeObject,
  ctx: EvaluateContext,
): RuleResult[] {
  const out: RuleResult[] = [];
  for (const p of policies) {
    if (!p.validate.length) continue;
    const req = (['CREATE', 'UPDATE'] as const)
      .map((op) => scanRequest(k, object, op))
      .find((r) => policyMatches(p, r, ctx));
    if (!req) continue;
    const e = evaluate([p], req, ctx);
    const byRule = new Map(e.decisions.map((d) => [d.rule, d]));
    const conditions = byRule.get('matchConditions');
    if (conditions) {
      out.push({
        policy: p.name,
        rule: 'matchConditions',
        result: 'error',
        message: messageOf(conditions),
      });
      continue;
    }
    const skipped = !e.matched?.includes(p.name);
    const exempted = new Map(e.exempted?.map((x) => [x.rule, x.exception]));
    for (const rule of p.validate) {
      const d = byRule.get(rule.name);
      const exception = exempted.get(rule.name);
      out.push(
        skipped
          ? { policy: p.name, rule: rule.name, result: 'skip', message: 'matchConditions not met' }
          : exception
            ? {
                policy: p.name,
                rule: rule.name,
                result: 'skip',
                exception,
                message: exemptedBy(exception),
              }
            : d
              ? { policy: p.name, rule: rule.name, result: failed(d), message: messageOf(d) }
              : { policy: p.name, rule: rule.name, result: 'pass', message: '' },
      );
    }
  }
  return out;
}
