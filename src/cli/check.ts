// `annex check -p POLICY... FILE...`: what the API server would answer to a create of
// each object, offline, with annex's AdmissionPolicies installed — as `kyverno apply` and
// `gator test` do for theirs. Each object goes through what a real create does first:
// defaults and admission plugins (the code of `annex defaults`) and the name validation
// of its kind; then every policy is evaluated by the same pure function as the webhook.
import type { Command } from 'commander';
import {
  createRefusal,
  nameCauses,
  randomSuffix,
  renderObject,
  type JsonObject,
} from '../admission/defaults/index.js';
import { groupOf } from '../admission/names/index.js';
import { jsonPatch, type PatchOp } from '../admission/patch.js';
import type { Status } from '../core/status.js';
import type { KubeObject } from '../core/types.js';
import type { CompiledPolicy } from '../policy/compile.js';
import { expandPaths, label, loadPolicyFiles } from '../policy/load.js';
import { ExceptionSet } from '../policy/exceptions/match.js';
import type { Exemption } from '../policy/exceptions/types.js';
import { DEFAULT_ANNEX_NAMESPACE } from '../policy/match.js';
import { evaluateAsInstalled, type InstalledEvaluation } from '../policy/as-installed.js';
import { vapName } from '../policy/cel/index.js';
import { evaluateVaps, loadVaps, type VapSet } from '../policy/vap/index.js';
import type { PolicyDecision } from '../policy/types.js';
import type { AdmissionRequest } from '../admission/review.js';
import { readObjects } from '../admission/defaults/input.js';
import { createRequest } from './create-request.js';
import { kubectlCreateErrors, kubectlInvalidText } from './kubectl-text.js';

export { kubectlInvalidText };
import { UserError } from '../errors.js';

export interface CheckOptions {
  /** Namespace for objects without one (kubectl's -n). */
  namespace: string;
  /** annex's own namespace, which policies never apply to. */
  annexNamespace?: string;
  /**
   * policy.native (default true): the policies CEL can express answer as the API server's
   * ValidatingAdmissionPolicies do, the rest as annex's webhook.
   */
  native?: boolean;
  /** The cluster's own ValidatingAdmissionPolicies and bindings (`--vap`). */
  vaps?: VapSet;
  /** Labels of the object's namespace (default only `kubernetes.io/metadata.name`). */
  namespaceLabels?: Record<string, string>;
  /** Who sends the request (default nobody: `userInfo: {}`). */
  userInfo?: AdmissionRequest['userInfo'];
  /** The PolicyExceptions (found beside the policies, in `-p` files). */
  exceptions?: ExceptionSet;
}

/** What the API server would answer to one object's create. */
export interface CheckResult {
  source: string;
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  allowed: boolean;
  /** What kubectl prints: `deployment.apps/web created (server dry run)` or its error text. */
  message: string;
  warnings: string[];
  /** The policies' changes, when any. */
  patch?: PatchOp[];
  /** The 422 Invalid Status, when denied. */
  status?: Status;
  decisions: PolicyDecision[];
  /** Other policies whose ValidatingAdmissionPolicy denies: the API server may name one of them instead. */
  otherDenials?: string[];
  /** What the `--vap` policies' Audit bindings record (kubectl prints nothing). */
  audits?: string[];
  /** The AdmissionPolicies that applied to the object; absent when it was refused before any. */
  matched?: string[];
  /** Rules that could not be evaluated, of policies with failurePolicy Ignore (allowed). */
  ignored?: InstalledEvaluation['ignored'];
  /** Rules a PolicyException lifted, each with the exception. */
  exempted?: Exemption[];
}

/** kubectl's name for an object in its result lines: `deployment.apps/web`, `configmap/x`. */
const kubectlRef = (group: string, kind: string, name: string) =>
  `${kind.toLowerCase()}${group ? `.${group}` : ''}/${name}`;

/** One object's create, as the API server with the policies installed would answer it. */
export function checkObject(
  obj: JsonObject,
  policies: readonly CompiledPolicy[],
  source: string,
  options: CheckOptions,
): CheckResult {
  const apiVersion = String(obj.apiVersion);
  const kind = String(obj.kind);
  const group = groupOf(apiVersion);
  const rendered = renderObject(obj, {
    admissionPlugins: true,
    lastApplied: true,
    namespace: options.namespace,
    output: 'yaml',
    uid: false,
  }) as KubeObject;
  const meta = (rendered.metadata ?? {}) as JsonObject;
  const suffix = randomSuffix();
  const { names } = nameCauses(obj, suffix);
  if (names.name) meta.name = names.name;
  const request = {
    ...createRequest(rendered),
    ...(options.userInfo ? { userInfo: options.userInfo } : {}),
  };
  const { name, namespace } = request;
  const base = { source, apiVersion, kind, ...(namespace ? { namespace } : {}), name };
  const denied = (status: Status, rest: Partial<CheckResult> = {}): CheckResult => ({
    ...base,
    allowed: false,
    message: kubectlCreateErrors([status], source)[0] ?? status.message,
    warnings: [],
    status,
    decisions: [],
    ...rest,
  });

  // The API server's own validation refuses the object before validating admission.
  const refusal = createRefusal(obj, suffix);
  if (refusal) return denied(refusal);

  const annexNamespace = options.annexNamespace ? { annexNamespace: options.annexNamespace } : {};
  const labels = options.namespaceLabels ? { namespaceLabels: options.namespaceLabels } : {};
  const e = evaluateAsInstalled(
    policies,
    request,
    { native: options.native ?? true, ...annexNamespace },
    {
      ...annexNamespace,
      ...labels,
      ...(options.exceptions ? { exceptions: options.exceptions } : {}),
    },
  );
  const patch = e.mutated ? jsonPatch(rendered, e.mutated) : undefined;
  // The cluster's VAPs: in the same plugin as the native AdmissionPolicies, after every
  // mutation and before annex's validating webhook.
  const v = options.vaps
    ? evaluateVaps(options.vaps, e.mutated ? { ...request, object: e.mutated } : request, labels)
    : undefined;
  // A native AdmissionPolicy's denial and a --vap one come from the same plugin, in no
  // fixed order; annex's webhook answers only when no VAP denies.
  const nativeDenial = !!e.vapDenied;
  const otherDenials = [
    ...e.otherDenials.map((p) => `ValidatingAdmissionPolicy '${vapName(p)}'`),
    ...(nativeDenial && v?.denier ? [v.denier] : []),
    ...(v?.otherDenials ?? []),
  ];
  const rest = {
    warnings: [...e.warnings, ...(v?.warnings ?? [])],
    decisions: e.decisions,
    ...(patch ? { patch } : {}),
    ...(otherDenials.length ? { otherDenials } : {}),
    ...(v?.audits.length ? { audits: v.audits } : {}),
    ...(e.matched ? { matched: e.matched } : {}),
    ...(e.ignored ? { ignored: e.ignored } : {}),
    ...(e.exempted ? { exempted: e.exempted } : {}),
  };
  if (v?.status && !nativeDenial) return denied(v.status, rest);
  if (!e.allowed && e.status) return denied(e.status, rest);
  return {
    ...base,
    allowed: true,
    message: `${kubectlRef(group, kind, name)} created (server dry run)`,
    ...rest,
  };
}

/** Every object of every file, in order. */
export function checkFiles(
  files: readonly string[],
  policies: readonly CompiledPolicy[],
  options: CheckOptions,
): CheckResult[] {
  return expandPaths(files).flatMap((file) =>
    readObjects(file, label(file)).map((obj) => checkObject(obj, policies, label(file), options)),
  );
}

/** One patch operation as `annex check` prints it: `add /spec/x: {"a":1}`. */
export const opText = (op: PatchOp) =>
  'value' in op ? `${op.op} ${op.path}: ${JSON.stringify(op.value)}` : `${op.op} ${op.path}`;

/**
 * One object's lines as kubectl would print them: warnings, then the result. annex adds
 * the patch of an allowed object and what Audit policies recorded, indented below.
 */
export function formatResult(r: CheckResult): string {
  const lines = [...r.warnings.map((w) => `Warning: ${w}`), r.message];
  if (r.allowed && r.patch?.length) {
    lines.push('  patch:', ...r.patch.map((op) => `    ${opText(op)}`));
  }
  for (const p of r.otherDenials ?? []) {
    lines.push(`  or denied by ${p} (the API server names one, in no fixed order)`);
  }
  for (const a of r.audits ?? []) lines.push(`  audit: ${a}`);
  for (const x of r.exempted ?? [])
    lines.push(`  exempted: ${x.policy}: ${x.rule} by PolicyException ${x.exception}`);
  for (const d of r.decisions.filter((d) => d.action === 'Audit')) {
    lines.push(...d.causes.map((c) => `  audit: ${d.policy}: ${c.field}: ${c.message}`));
  }
  return `${lines.join('\n')}\n`;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function register(program: Command): void {
  program
    .command('check')
    .description(
      "what the API server would answer to creating these objects with the AdmissionPolicies (and the cluster's own ValidatingAdmissionPolicies) installed, offline (exit 1 on any denial)",
    )
    .option(
      '-p, --policy <path>',
      'AdmissionPolicy (and PolicyException) file or folder (repeat for more)',
      collect,
      [],
    )
    .option(
      '--vap <path>',
      'ValidatingAdmissionPolicy and binding file or folder, as kubectl get -o yaml prints them (repeat for more)',
      collect,
      [],
    )
    .argument('<files...>', 'YAML or JSON files or folders of objects, or - for stdin')
    .option('-n, --namespace <namespace>', 'namespace for objects without one', 'default')
    .option('-o, --output <format>', 'text or json', 'text')
    .option(
      '--no-native',
      "as with policy.native: false: every policy answers as annex's webhook, none as a ValidatingAdmissionPolicy",
    )
    .action(
      (
        files: string[],
        opts: {
          policy: string[];
          vap: string[];
          namespace: string;
          output: string;
          native: boolean;
        },
      ) => {
        if (opts.output !== 'text' && opts.output !== 'json') {
          throw new UserError(`--output: must be text or json, got "${opts.output}"`);
        }
        if (opts.policy.length === 0 && opts.vap.length === 0) {
          throw new UserError(
            '-p, --policy / --vap: name at least one AdmissionPolicy or ValidatingAdmissionPolicy file or folder',
          );
        }
        if ([...opts.policy, ...opts.vap, ...files].filter((f) => f === '-').length > 1) {
          throw new UserError('- (stdin) can be read only once');
        }
        // An exception without a namespace is in -n's, as kubectl apply would put it.
        const { policies, exceptions: found } = loadPolicyFiles(opts.policy, opts.namespace);
        const exceptions = new ExceptionSet(DEFAULT_ANNEX_NAMESPACE);
        exceptions.replace(found);
        const vaps = opts.vap.length ? loadVaps(opts.vap) : undefined;
        for (const note of vaps?.notes ?? []) process.stderr.write(`annex: note: ${note}\n`);
        const results = checkFiles(files, policies, {
          namespace: opts.namespace,
          native: opts.native,
          ...(vaps ? { vaps } : {}),
          ...(found.length ? { exceptions } : {}),
        });
        const denied = results.filter((r) => !r.allowed).length;
        if (opts.output === 'json') {
          process.stdout.write(
            `${JSON.stringify({ allowed: denied === 0, denied, results }, null, 2)}\n`,
          );
        } else {
          process.stdout.write(results.map(formatResult).join(''));
        }
        if (denied > 0) process.exitCode = 1;
      },
    );
}
