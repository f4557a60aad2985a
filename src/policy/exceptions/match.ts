// Which PolicyException exempts a rule of a policy from a request: pure, shared by the
// webhook, background scans and `annex check`. An exception exempts only objects of its
// own namespace — a namespace's editors must not exempt another's objects — except one in
// annex's own namespace (writable by cluster admins only), which may exempt any object,
// cluster-scoped ones included.
import type { AdmissionRequest } from '../../admission/review.js';
import { selectorMatches } from '../../admission/webhook.js';
import type { CompiledPolicy } from '../compile.js';
import { isRecord } from '../paths.js';
import type { Exemption, PolicyException, ResourceFilter } from './types.js';
import { EXCEPTION_KIND } from './types.js';

export class ExceptionError extends Error {}

/** A name pattern's test: `*` any run, `?` one character, everything else literal. */
export interface Wildcard {
  test(s: string): boolean;
}

/**
 * Compiles a name pattern. Not a RegExp: exception authors write these patterns and annex
 * runs them on every review, and a backtracking `^.*a.*a…b$` can block the event loop for
 * minutes on a 253-character name. The greedy matcher below backs up only to the last
 * `*`, so a test costs at most pattern × name steps.
 */
export function wildcard(pattern: string): Wildcard {
  return { test: (s) => globMatch(pattern, s) };
}

function globMatch(p: string, s: string): boolean {
  let i = 0; // in s
  let j = 0; // in p
  let star = -1; // p index after the last `*`
  let from = 0; // s index that `*` was last tried at
  while (i < s.length) {
    if (j < p.length && (p[j] === '?' || (p[j] !== '*' && p[j] === s[i]))) {
      i++;
      j++;
    } else if (j < p.length && p[j] === '*') {
      star = ++j;
      from = i;
    } else if (star >= 0) {
      // The last `*` takes one more character; retry the rest of the pattern after it.
      j = star;
      i = ++from;
    } else return false;
  }
  while (j < p.length && p[j] === '*') j++;
  return j === p.length;
}

const VERSION = /^v\d+((alpha|beta)\d+)?$/;

/** A kind selector's group, version and Kind (undefined: any). */
export function parseKind(s: string): { group?: string; version?: string; kind: string } {
  const parts = s.split('/');
  if (parts.length >= 3) return { group: parts[0]!, version: parts[1]!, kind: parts[2]! };
  if (parts.length === 2)
    // "v1/Pod" is version/Kind (Kyverno's reading); "apps/Deployment" group/Kind (annex's match.kinds).
    return VERSION.test(parts[0]!)
      ? { version: parts[0]!, kind: parts[1]! }
      : { group: parts[0]!, kind: parts[1]! };
  return { kind: s };
}

interface CompiledFilter {
  kinds?: ReturnType<typeof parseKind>[];
  names?: Wildcard[];
  namespaces?: Wildcard[];
  selector?: ResourceFilter['resources']['selector'];
}

export interface CompiledException {
  /** `namespace/name`. */
  key: string;
  namespace: string;
  /** Policy name → its exempted rules ('*': every rule). */
  policies: Map<string, Set<string> | '*'>;
  any: CompiledFilter[];
  all: CompiledFilter[];
  source: PolicyException;
}

function fault(key: string, what: string): never {
  throw new ExceptionError(`${EXCEPTION_KIND} "${key}": ${what}`);
}

const stringList = (v: unknown) =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;

function compileFilter(key: string, f: unknown): CompiledFilter {
  const r =
    isRecord(f) && isRecord(f.resources) ? f.resources : fault(key, 'a filter without resources');
  const out: CompiledFilter = {};
  for (const field of ['kinds', 'names', 'namespaces'] as const) {
    if (r[field] === undefined) continue;
    const list = stringList(r[field]) ?? fault(key, `resources.${field} must be a list of strings`);
    if (field === 'kinds') out.kinds = list.map(parseKind);
    else out[field] = list.map(wildcard);
  }
  if (r.selector !== undefined) {
    if (!isRecord(r.selector)) fault(key, 'resources.selector must be a label selector');
    out.selector = r.selector as CompiledFilter['selector'];
  }
  if (!Object.keys(out).length)
    fault(key, 'set at least one of kinds, names, namespaces, selector');
  return out;
}

/** Checks and compiles one exception; `namespace` stands in for a missing metadata.namespace. */
export function compileException(obj: unknown, namespace = 'default'): CompiledException {
  const o = isRecord(obj) ? (obj as unknown as PolicyException) : fault('?', 'not an object');
  const ns = o.metadata?.namespace || namespace;
  const key = `${ns}/${o.metadata?.name ?? ''}`;
  if (o.kind !== EXCEPTION_KIND) fault(key, `kind must be ${EXCEPTION_KIND}`);
  const spec = isRecord(o.spec) ? o.spec : fault(key, 'spec is required');
  if (typeof spec.reason !== 'string' || !spec.reason) fault(key, 'spec.reason is required');
  if (!Array.isArray(spec.exceptions) || !spec.exceptions.length)
    fault(key, 'spec.exceptions must name at least one policy');
  const policies = new Map<string, Set<string> | '*'>();
  for (const e of spec.exceptions) {
    if (!isRecord(e) || typeof e.policyName !== 'string' || !e.policyName)
      fault(key, 'every spec.exceptions entry needs a policyName');
    const rules = e.ruleNames === undefined ? undefined : stringList(e.ruleNames);
    if (e.ruleNames !== undefined && !rules) fault(key, 'ruleNames must be a list of strings');
    const known = policies.get(e.policyName);
    if (!rules || known === '*') policies.set(e.policyName, '*');
    else policies.set(e.policyName, new Set([...(known ?? []), ...rules]));
  }
  const m = isRecord(spec.match) ? spec.match : fault(key, 'spec.match is required');
  const list = (v: unknown, name: string) =>
    v === undefined
      ? []
      : Array.isArray(v)
        ? v.map((f) => compileFilter(key, f))
        : fault(key, `spec.match.${name} must be a list`);
  const any = list(m.any, 'any');
  const all = list(m.all, 'all');
  if (!any.length && !all.length) fault(key, 'spec.match: set any or all');
  return { key, namespace: ns, policies, any, all, source: o };
}

function labelsOf(req: AdmissionRequest): Record<string, unknown> {
  const meta = (req.object ?? req.oldObject)?.metadata;
  return isRecord(meta) && isRecord(meta.labels) ? meta.labels : {};
}

function filterMatches(f: CompiledFilter, req: AdmissionRequest): boolean {
  const { group, version, kind } = req.kind;
  if (
    f.kinds &&
    !f.kinds.some(
      (k) =>
        k.kind === kind &&
        (k.group === undefined || k.group === group) &&
        (k.version === undefined || k.version === version),
    )
  )
    return false;
  const name = req.name || (req.object ?? req.oldObject)?.metadata?.name || '';
  if (f.names && !f.names.some((r) => r.test(String(name)))) return false;
  if (f.namespaces && !f.namespaces.some((r) => r.test(req.namespace ?? ''))) return false;
  return !f.selector || selectorMatches(f.selector, labelsOf(req));
}

/**
 * Whether `e` may exempt `req` at all: its own namespace's objects, or anything from
 * annex's. A Namespace is cluster-scoped, though the API server sends its review with
 * `namespace` set to its own name: the namespace's editors must not exempt it.
 */
export function inScope(e: CompiledException, req: AdmissionRequest, annexNamespace: string) {
  if (e.namespace === annexNamespace) return true;
  const isNamespace = req.resource.group === '' && req.resource.resource === 'namespaces';
  return !isNamespace && !!req.namespace && req.namespace === e.namespace;
}

export function exceptionMatches(
  e: CompiledException,
  req: AdmissionRequest,
  annexNamespace: string,
): boolean {
  if (!inScope(e, req, annexNamespace)) return false;
  if (e.any.length && !e.any.some((f) => filterMatches(f, req))) return false;
  return e.all.every((f) => filterMatches(f, req));
}

/** Whether a policy takes exceptions (spec.allowExceptions, default true). */
export const allowsExceptions = (p: CompiledPolicy) => p.source.spec?.allowExceptions !== false;

/**
 * The exceptions that name `p` and that it takes: such a policy is enforced by annex's
 * webhook, not compiled to a ValidatingAdmissionPolicy — the webhook honours the exception
 * and records each use of it, which the API server's own policy could not.
 */
export const liveExceptions = (set: ExceptionSet | undefined, p: CompiledPolicy) =>
  set && allowsExceptions(p) ? set.naming(p.name) : [];

/** The exceptions known, by the policies they name. */
export class ExceptionSet {
  private readonly byKey = new Map<string, CompiledException>();
  private byPolicy = new Map<string, CompiledException[]>();

  constructor(readonly annexNamespace: string) {}

  get size(): number {
    return this.byKey.size;
  }

  put(e: CompiledException): void {
    this.byKey.set(e.key, e);
    this.reindex();
  }

  delete(key: string): void {
    if (this.byKey.delete(key)) this.reindex();
  }

  replace(es: readonly CompiledException[]): void {
    this.byKey.clear();
    for (const e of es) this.byKey.set(e.key, e);
    this.reindex();
  }

  all(): CompiledException[] {
    return [...this.byKey.values()];
  }

  /** The exceptions naming `policy`, sorted by key. */
  naming(policy: string): readonly CompiledException[] {
    return this.byPolicy.get(policy) ?? [];
  }

  /** The exception (`namespace/name`, the first by key) exempting `rule` of `p` from `req`. */
  exemption(p: CompiledPolicy, rule: string, req: AdmissionRequest): string | undefined {
    if (!allowsExceptions(p)) return undefined;
    for (const e of this.naming(p.name)) {
      const rules = e.policies.get(p.name)!;
      if (rules !== '*' && !rules.has(rule)) continue;
      if (exceptionMatches(e, req, this.annexNamespace)) return e.key;
    }
    return undefined;
  }

  private reindex(): void {
    const by = new Map<string, CompiledException[]>();
    const sorted = [...this.byKey.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
    for (const e of sorted) for (const p of e.policies.keys()) by.set(p, [...(by.get(p) ?? []), e]);
    this.byPolicy = by;
  }
}

export type { Exemption };
