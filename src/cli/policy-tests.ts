// `annex test PATH...`: policy test suites, in the spirit of `kyverno test` and `gator
// verify`. Each AdmissionPolicyTest file (policy-tests-schema.ts) names AdmissionPolicies,
// objects, and the result expected of each rule on each object; the objects are created
// offline by `annex check`'s own checkObject — one evaluation path — and each rule's
// result is read off its answer. Prints a table (or JUnit XML); exit 1 on any mismatch.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { Ajv, type ErrorObject } from 'ajv';
import { readObjects } from '../admission/defaults/input.js';
import type { JsonObject } from '../admission/defaults/index.js';
import type { FieldCause } from '../admission/verdict.js';
import { UserError } from '../errors.js';
import type { CompiledPolicy } from '../policy/compile.js';
import { ExceptionSet } from '../policy/exceptions/match.js';
import { isDirectory, loadPolicyFiles } from '../policy/load.js';
import { DEFAULT_ANNEX_NAMESPACE } from '../policy/match.js';
import { checkFiles, opText, type CheckResult } from './check.js';
import { policyTestSchema, TEST_KIND, type RuleResult } from './policy-tests-schema.js';

export interface PolicyTest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  policies: string[];
  resources: string[];
  exceptions?: string[];
  namespace?: string;
  namespaceLabels?: Record<string, string>;
  userInfo?: { username?: string; groups?: string[] };
  native?: boolean;
  results: {
    policy: string;
    rule: string;
    resources: string[];
    result: RuleResult;
    message?: string;
  }[];
}

/** One checked row: an expectation on one object. */
export interface TestRow {
  file: string;
  test: string;
  policy: string;
  rule: string;
  resource: string;
  result: RuleResult;
  /** What the rule said (its causes), or the refusal of an `error`. */
  message: string;
  expected: RuleResult;
  expectedMessage?: string;
  ok: boolean;
}

const validate = new Ajv({ allErrors: true }).compile(policyTestSchema);

/** `results[2].result` from ajv's `/results/2/result`. */
const fieldOf = (pointer: string) =>
  pointer
    .split('/')
    .slice(1)
    .reduce((out, seg) => (/^\d+$/.test(seg) ? `${out}[${seg}]` : out ? `${out}.${seg}` : seg), '');

function schemaError(file: string, e: ErrorObject, doc: unknown): UserError {
  const at = e.instancePath
    .split('/')
    .slice(1)
    .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], doc);
  const field = fieldOf(e.instancePath);
  switch (e.keyword) {
    case 'enum':
      return new UserError(
        `${file}: ${field}: must be one of ${(e.params as { allowedValues: string[] }).allowedValues.join(', ')}, got ${JSON.stringify(at)}`,
      );
    case 'const':
      return new UserError(
        `${file}: ${field}: must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}, got ${JSON.stringify(at)}`,
      );
    case 'required':
      return new UserError(
        `${file}: ${[field, (e.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.')}: required`,
      );
    case 'additionalProperties':
      return new UserError(
        `${file}: ${[field, (e.params as { additionalProperty: string }).additionalProperty].filter(Boolean).join('.')}: unknown field`,
      );
    default:
      return new UserError(`${file}: ${field || '(root)'}: ${e.message ?? 'invalid'}`);
  }
}

/** The test files named: a folder contributes its `*.test.yaml` / `*.test.yml` files, recursively. */
export function testFiles(paths: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((d) =>
        d.isDirectory()
          ? walk(join(dir, d.name))
          : /\.test\.ya?ml$/.test(d.name)
            ? [join(dir, d.name)]
            : [],
      );
  for (const p of paths) {
    if (!isDirectory(p)) {
      out.push(p);
      continue;
    }
    const found = walk(p);
    if (!found.length) throw new UserError(`${p}: no *.test.yaml file in the folder`);
    out.push(...found);
  }
  return out;
}

/** The AdmissionPolicyTests of one file, validated against the schema. */
export function readTests(file: string): PolicyTest[] {
  return readObjects(file).map((doc: JsonObject) => {
    if (doc.kind !== TEST_KIND) {
      throw new UserError(`${file}: kind: must be "${TEST_KIND}", got ${JSON.stringify(doc.kind)}`);
    }
    if (!validate(doc)) throw schemaError(file, validate.errors![0]!, doc);
    return doc as unknown as PolicyTest;
  });
}

/** `Deployment/web`: how rows name an object, and what expectations may say. */
const refOf = (r: CheckResult) => `${r.kind}/${r.name}`;

/**
 * How a row names an object among `all`: `Kind/name`, or `namespace/Kind/name` when
 * another object of the test has the same kind and name.
 */
const shownRef = (r: CheckResult, all: readonly CheckResult[]) =>
  all.some((o) => o !== r && refOf(o) === refOf(r)) ? `${r.namespace ?? ''}/${refOf(r)}` : refOf(r);

/** The objects `ref` names: `name`, `Kind/name` (the kind in any case) or `namespace/Kind/name`. */
function objectsNamed(ref: string, checked: readonly CheckResult[]): CheckResult[] {
  const parts = ref.split('/');
  const [namespace, kind, name] =
    parts.length === 1
      ? [undefined, undefined, ref]
      : parts.length === 2
        ? [undefined, ...parts]
        : parts;
  return checked.filter(
    (r) =>
      r.name === name &&
      (kind === undefined || r.kind.toLowerCase() === kind.toLowerCase()) &&
      (namespace === undefined || (r.namespace ?? '') === namespace),
  );
}

/** The result of `policy`'s rule `rule` in one object's answer, and what the rule said. */
export function ruleResult(
  r: CheckResult,
  policy: CompiledPolicy,
  rule: string,
): { result: RuleResult; message: string } {
  if (!r.matched) return { result: 'error', message: r.message };
  if (!r.matched.includes(policy.name)) return { result: 'skip', message: '' };
  const exempted = r.exempted?.find((x) => x.policy === policy.name && x.rule === rule);
  if (exempted)
    return { result: 'skip', message: `exempted by PolicyException ${exempted.exception}` };
  const said = (causes: readonly FieldCause[]) =>
    causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join('; ');
  const ignored = r.ignored?.find((x) => x.policy === policy.name && x.rule === rule);
  if (ignored) return { result: 'error', message: said(ignored.causes) };
  const d = r.decisions.find((x) => x.policy === policy.name && x.rule === rule);
  if (!d) {
    // A mutate rule that ran: what the object's patch says (of every mutate rule applied).
    const mutates = policy.mutate.some((m) => m.name === rule);
    return { result: 'pass', message: mutates ? (r.patch ?? []).map(opText).join('; ') : '' };
  }
  return { result: d.action === 'Warn' ? 'warn' : 'fail', message: said(d.causes) };
}

/** Every expectation of one test checked: its rows. Bad references are UserErrors naming the field. */
export function runTest(file: string, t: PolicyTest): TestRow[] {
  const dir = dirname(file);
  const at = (list: string, i: number, p: string) => {
    const path = join(dir, p);
    if (!existsSync(path)) {
      throw new UserError(`${file}: ${list}[${i}]: ${p}: no such file or directory`);
    }
    return path;
  };
  const namespace = t.namespace ?? 'default';
  // As `annex check -p`: exceptions may sit beside the policies, or in their own files.
  const loaded = loadPolicyFiles(
    t.policies.map((p, i) => at('policies', i, p)),
    namespace,
  );
  const policies = loaded.policies;
  const extra = loadPolicyFiles(
    (t.exceptions ?? []).map((p, i) => at('exceptions', i, p)),
    namespace,
  );
  if (extra.policies.length) {
    throw new UserError(
      `${file}: exceptions: AdmissionPolicy "${extra.policies[0]!.name}" in an exceptions file: list it in policies`,
    );
  }
  const exceptions = new ExceptionSet(DEFAULT_ANNEX_NAMESPACE);
  exceptions.replace([...loaded.exceptions, ...extra.exceptions]);
  const checked = checkFiles(
    t.resources.map((p, i) => at('resources', i, p)),
    policies,
    {
      namespace,
      exceptions,
      ...(t.native !== undefined ? { native: t.native } : {}),
      ...(t.namespaceLabels ? { namespaceLabels: t.namespaceLabels } : {}),
      ...(t.userInfo ? { userInfo: t.userInfo } : {}),
    },
  );
  const rows: TestRow[] = [];
  for (const [i, e] of t.results.entries()) {
    const where = `${file}: results[${i}]`;
    const policy = policies.find((p) => p.name === e.policy);
    if (!policy) {
      throw new UserError(
        `${where}.policy: no AdmissionPolicy "${e.policy}" in policies (${policies.map((p) => p.name).join(', ') || 'none'})`,
      );
    }
    const rules = [...policy.validate, ...policy.mutate].map((r) => r.name);
    if (!rules.includes(e.rule)) {
      throw new UserError(
        `${where}.rule: AdmissionPolicy "${policy.name}" has no rule "${e.rule}" (${rules.join(', ')})`,
      );
    }
    for (const [j, ref] of e.resources.entries()) {
      const found = ref.split('/').length > 3 ? [] : objectsNamed(ref, checked);
      if (found.length !== 1) {
        throw new UserError(
          `${where}.resources[${j}]: ${found.length ? `${found.length} objects are "${ref}": name one as Kind/name or namespace/Kind/name (${found.map((r) => shownRef(r, checked)).join(', ')})` : `no object "${ref}" in resources (${checked.map((r) => shownRef(r, checked)).join(', ') || 'none'})`}`,
        );
      }
      const r = found[0]!;
      const { result, message } = ruleResult(r, policy, e.rule);
      const ok = result === e.result && (e.message === undefined || message.includes(e.message));
      rows.push({
        file,
        test: t.metadata.name,
        policy: policy.name,
        rule: e.rule,
        resource: shownRef(r, checked),
        result,
        message,
        expected: e.result,
        ...(e.message !== undefined ? { expectedMessage: e.message } : {}),
        ok,
      });
    }
  }
  return rows;
}

/** Columns padded as kubectl's tables are: three spaces between them. */
export function formatTable(rows: readonly TestRow[]): string {
  const header = ['TEST', 'POLICY', 'RULE', 'RESOURCE', 'RESULT', 'EXPECTED', 'OK'];
  const cells = rows.map((r) => [
    r.test,
    r.policy,
    r.rule,
    r.resource,
    r.result,
    r.expected,
    r.ok ? '✓' : '✗',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) =>
    c
      .map((x, i) => x.padEnd(widths[i]!))
      .join('   ')
      .trimEnd();
  return [header, ...cells].map(line).join('\n') + '\n';
}

/** What a failed row says below the table. */
export function mismatch(r: TestRow): string {
  const what = `${r.file}: ${r.test}: ${r.policy}/${r.rule} on ${r.resource}`;
  if (r.result !== r.expected) {
    return `${what}: got ${r.result}, expected ${r.expected}${r.message ? ` (${r.message})` : ''}`;
  }
  return `${what}: message ${JSON.stringify(r.message)} does not contain ${JSON.stringify(r.expectedMessage)}`;
}

const xml = (s: string) =>
  s
    // Characters XML 1.0 cannot carry at all.
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');

/** JUnit XML: a testsuite per test file, a testcase per row, a failure per mismatch. */
export function formatJunit(rows: readonly TestRow[]): string {
  const files = [...new Set(rows.map((r) => r.file))];
  const failures = rows.filter((r) => !r.ok).length;
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="annex test" tests="${rows.length}" failures="${failures}">`,
  ];
  for (const file of files) {
    const mine = rows.filter((r) => r.file === file);
    out.push(
      `  <testsuite name="${xml(file)}" tests="${mine.length}" failures="${mine.filter((r) => !r.ok).length}">`,
    );
    for (const r of mine) {
      const name = `${r.policy}/${r.rule} ${r.resource} ${r.expected}`;
      const open = `    <testcase classname="${xml(r.test)}" name="${xml(name)}"`;
      if (r.ok) {
        out.push(`${open}/>`);
      } else {
        out.push(
          `${open}>`,
          `      <failure message="${xml(mismatch(r))}" type="mismatch">${xml(r.message)}</failure>`,
          '    </testcase>',
        );
      }
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}

/** Every row of every test of every file, in order. */
export function runTestFiles(paths: readonly string[]): TestRow[] {
  return testFiles(paths).flatMap((file) => {
    const shown = relative(process.cwd(), resolve(file)) || file;
    return readTests(file).flatMap((t) => runTest(shown, t));
  });
}

export function register(program: Command): void {
  program
    .command('test')
    .description(
      'run AdmissionPolicyTest files: the result of each rule on each object, as `annex check` evaluates them, against the expected one (exit 1 on any mismatch)',
    )
    .argument('<paths...>', 'test files, or folders searched recursively for *.test.yaml')
    .option('-o, --output <format>', 'table or junit', 'table')
    .action((paths: string[], opts: { output: string }) => {
      if (opts.output !== 'table' && opts.output !== 'junit') {
        throw new UserError(`--output: must be table or junit, got "${opts.output}"`);
      }
      const rows = runTestFiles(paths);
      const failed = rows.filter((r) => !r.ok);
      if (opts.output === 'junit') {
        process.stdout.write(formatJunit(rows));
      } else {
        process.stdout.write(formatTable(rows));
        if (failed.length) process.stdout.write(`\n${failed.map(mismatch).join('\n')}\n`);
        process.stdout.write(
          `\n${rows.length - failed.length} of ${rows.length} as expected${failed.length ? `, ${failed.length} not` : ''}\n`,
        );
      }
      if (failed.length) process.exitCode = 1;
    });
}
