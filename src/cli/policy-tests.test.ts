// `annex test`: the shipped suites of test/policies pass and cover every rule of every
// demo policy; a wrong expectation exits 1 naming the mismatch; JUnit output is
// well-formed; every bad input is one line and a non-zero exit. Runs the built CLI
// (dist/cli/main.js, `npm run build`) as a user does.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectOneLineError, runCli } from '../../test/cluster/cli.js';
import { UserError } from '../errors.js';
import { loadPolicies } from '../policy/load.js';
import { formatJunit, runTestFiles, type TestRow } from './policy-tests.js';
import { formatReference } from './policy-tests-schema.js';

const repo = join(import.meta.dirname, '..', '..');
const suites = join(repo, 'test', 'policies');

/** A copy of the shipped suites (and the policies they name) to break. */
function copy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'annex-test-'));
  cpSync(join(repo, 'policies'), join(dir, 'policies'), { recursive: true });
  cpSync(suites, join(dir, 'test', 'policies'), { recursive: true });
  return dir;
}
const edit = (file: string, from: string | RegExp, to: string) => {
  const text = readFileSync(file, 'utf8');
  const next = text.replace(from, to);
  expect(next).not.toBe(text);
  writeFileSync(file, next);
};

/**
 * A minimal XML well-formedness check (no XML parser is a dependency): one declaration,
 * tags balanced and properly nested, attributes quoted, no raw `<` or bare `&` in text or
 * attribute values. Returns the elements with their attributes, in document order.
 */
function parseXml(text: string): { name: string; attrs: Record<string, string> }[] {
  const elements: { name: string; attrs: Record<string, string> }[] = [];
  const stack: string[] = [];
  const body = text.replace(/^<\?xml version="1\.0" encoding="UTF-8"\?>\n/, '');
  expect(body).not.toBe(text);
  const token = /<(\/?)([A-Za-z][\w-]*)((?:\s+[\w-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let m: RegExpExecArray | null;
  let end = 0;
  while ((m = token.exec(body))) {
    end = token.lastIndex;
    const [, close, name, attrText, selfClose, chars] = m;
    const raw = chars ?? attrText ?? '';
    expect(raw.replace(/&(amp|lt|gt|quot|apos);/g, '')).not.toMatch(/&/);
    if (chars !== undefined) {
      if (stack.length === 0) expect(chars.trim()).toBe('');
      continue;
    }
    if (close) {
      expect(stack.pop()).toBe(name);
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of (attrText ?? '').matchAll(/([\w-]+)="([^"]*)"/g)) attrs[a[1]!] = a[2]!;
    if (stack.length === 0) expect(elements).toHaveLength(0);
    elements.push({ name: name!, attrs });
    if (!selfClose) stack.push(name!);
  }
  expect(end).toBe(body.length);
  expect(stack).toEqual([]);
  return elements;
}

describe('annex test on the shipped suites (test/policies)', () => {
  it('every expectation holds: exit 0, a row per expectation and object', async () => {
    const r = await runCli(['test', suites]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TEST +POLICY +RULE +RESOURCE +RESULT +EXPECTED +OK$/);
    expect(lines.at(-1)).toMatch(/^(\d+) of \1 as expected$/);
    expect(r.stdout).not.toContain('✗');
  });

  it('cover every rule of every policy in policies/: a pass, and a fail or warn (a mutate rule: a skip)', () => {
    const rows = runTestFiles([suites]);
    const seen = (policy: string, rule: string, results: string[]) =>
      rows.some(
        (r: TestRow) =>
          r.ok && r.policy === policy && r.rule === rule && results.includes(r.result),
      );
    const shipped = loadPolicies([join(repo, 'policies')]);
    expect(shipped.length).toBeGreaterThanOrEqual(5);
    for (const p of shipped) {
      for (const rule of p.validate) {
        expect(seen(p.name, rule.name, ['pass']), `${p.name}/${rule.name} pass`).toBe(true);
        expect(seen(p.name, rule.name, ['fail', 'warn']), `${p.name}/${rule.name} fail`).toBe(true);
      }
      // A mutate rule fails only when it cannot be evaluated, which no object the API
      // server decodes makes the shipped ones do: its pass is checked by its patch.
      for (const rule of p.mutate) {
        expect(seen(p.name, rule.name, ['pass']), `${p.name}/${rule.name} pass`).toBe(true);
        expect(seen(p.name, rule.name, ['skip']), `${p.name}/${rule.name} skip`).toBe(true);
      }
    }
  });
});

describe('annex test: mismatches', () => {
  it('a wrong result: exit 1, the row marked, the mismatch named below the table', async () => {
    const dir = copy();
    const file = join(dir, 'test', 'policies', 'pinned-images.test.yaml');
    edit(
      file,
      /resources: \[Pod\/latest\]\n {4}result: fail/,
      'resources: [Pod/latest]\n    result: pass',
    );
    const r = await runCli(['test', join(dir, 'test', 'policies')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /pinned-images +pinned-images +containers +Pod\/latest +fail +pass +✗/,
    );
    expect(r.stdout).toContain(
      `pinned-images.test.yaml: pinned-images: pinned-images/containers on Pod/latest: got fail, expected pass (spec.containers[0].image: Invalid value: "nginx:latest": must be pinned to a tag other than latest, or to a digest)`,
    );
    expect(r.stdout).toMatch(/\n44 of 45 as expected, 1 not\n$/);
  });

  it('a wrong message: exit 1, what the rule said and what was expected', async () => {
    const dir = copy();
    const file = join(dir, 'test', 'policies', 'workload-names.test.yaml');
    edit(file, 'message: must not contain dots', 'message: must not contain dashes');
    const r = await runCli(['test', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      'workload-names/dns-label on Deployment/web.front: message "metadata.name: Invalid value: \\"web.front\\": must not contain dots" does not contain "must not contain dashes"',
    );
  });

  it('--output junit: well-formed XML, a testcase per row, a failure per mismatch', async () => {
    const dir = copy();
    edit(
      join(dir, 'test', 'policies', 'host-network.test.yaml'),
      'resources: [Service/front]\n    result: skip',
      'resources: [Service/front]\n    result: pass',
    );
    const r = await runCli(['test', '-o', 'junit', join(dir, 'test', 'policies')]);
    expect(r.code).toBe(1);
    const els = parseXml(r.stdout);
    expect(els[0]).toMatchObject({
      name: 'testsuites',
      attrs: { name: 'annex test', tests: '45', failures: '1' },
    });
    const suitesEls = els.filter((e) => e.name === 'testsuite');
    expect(suitesEls).toHaveLength(7);
    expect(els.filter((e) => e.name === 'testcase')).toHaveLength(45);
    const failures = els.filter((e) => e.name === 'failure');
    expect(failures).toHaveLength(1);
    expect(failures[0]!.attrs.message).toContain(
      'host-network/no-host-network on Service/front: got skip, expected pass',
    );
    const hn = suitesEls.find((s) => s.attrs.name!.endsWith('host-network.test.yaml'));
    expect(hn?.attrs).toMatchObject({ tests: '5', failures: '1' });
  });

  it('JUnit escapes what XML cannot carry as is', () => {
    const row: TestRow = {
      file: 'a&b.test.yaml',
      test: '<t>',
      policy: 'p',
      rule: 'r',
      resource: 'Pod/x',
      result: 'fail',
      message: 'Invalid value: "<a & b>"\u0001',
      expected: 'pass',
      ok: false,
    };
    const els = parseXml(formatJunit([row, { ...row, ok: true, result: 'pass' }]));
    expect(els.find((e) => e.name === 'testsuite')?.attrs.name).toBe('a&amp;b.test.yaml');
    expect(els.filter((e) => e.name === 'failure')).toHaveLength(1);
  });
});

/** A new folder with policy.yaml: the AdmissionPolicy `name` with `spec` (indented YAML). */
function policyDir(name: string, spec: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'annex-test-'));
  writeFileSync(
    join(dir, 'policy.yaml'),
    `apiVersion: policy.annex.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata: {name: ${name}}\nspec:\n${spec}`,
  );
  return dir;
}

describe('annex test: the request a test describes', () => {
  it('namespaceLabels and userInfo reach the policies (namespaceSelector, CEL request.userInfo)', async () => {
    const dir = policyDir(
      'prod-owners',
      `  match:
    kinds: [ConfigMap]
    namespaceSelector: {matchLabels: {env: prod}}
  validate:
  - name: owner
    expression: "request.userInfo.username == 'alice'"
    message: only alice changes prod
`,
    );
    writeFileSync(
      join(dir, 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\n',
    );
    const test = (user: string, env: string, result: string) =>
      `apiVersion: policy.annex.dev/v1alpha1
kind: AdmissionPolicyTest
metadata: {name: ${user}-${env}}
policies: [policy.yaml]
resources: [cm.yaml]
namespaceLabels: {env: ${env}}
userInfo: {username: ${user}, groups: [devs]}
results:
- {policy: prod-owners, rule: owner, resources: [settings], result: ${result}}
`;
    writeFileSync(
      join(dir, 'a.test.yaml'),
      [test('alice', 'prod', 'pass'), test('bob', 'prod', 'fail'), test('bob', 'dev', 'skip')].join(
        '---\n',
      ),
    );
    const r = await runCli(['test', dir]);
    expect(r.stdout).toMatch(/bob-prod +prod-owners +owner +ConfigMap\/settings +fail +fail +✓/);
    expect(r.stdout).toMatch(/\n3 of 3 as expected\n$/);
    expect(r.code).toBe(0);
  });
});

describe('annex test: a rule that cannot be evaluated', () => {
  it('is an error under failurePolicy Ignore (allowed, nothing recorded), a fail under Fail', () => {
    const spec = (failurePolicy: string) => `  match: {kinds: [ConfigMap]}
  failurePolicy: ${failurePolicy}
  mutate:
  - {name: x, path: $.data.x, setIfAbsent: {y: z}}
`;
    const rows = (failurePolicy: string) => {
      const dir = policyDir('strict', spec(failurePolicy));
      writeFileSync(
        join(dir, 'cm.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {x: v}\n',
      );
      writeFileSync(
        join(dir, 'a.test.yaml'),
        `apiVersion: policy.annex.dev/v1alpha1
kind: AdmissionPolicyTest
metadata: {name: t}
policies: [policy.yaml]
resources: [cm.yaml]
results:
- {policy: strict, rule: x, resources: [c], result: error, message: 'Internal error: rule "x": data[x] is not an object'}
`,
      );
      return runTestFiles([dir]).map((r) => [r.result, r.ok]);
    };
    expect(rows('Ignore')).toEqual([['error', true]]);
    expect(rows('Fail')).toEqual([['fail', false]]);
  });
});

describe('annex test: naming objects', () => {
  it('objects of two namespaces with one kind and name: namespace/Kind/name, shown so in the rows', () => {
    const dir = policyDir(
      'shop-only',
      `  match: {kinds: [ConfigMap], namespaces: [shop]}
  validate:
  - {name: label, path: $.metadata.labels.team, required: true}
`,
    );
    writeFileSync(
      join(dir, 'cms.yaml'),
      ['shop', 'dev']
        .map(
          (ns) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ${ns}}\n`,
        )
        .join('---\n'),
    );
    const test = (refs: string) => `apiVersion: policy.annex.dev/v1alpha1
kind: AdmissionPolicyTest
metadata: {name: ns}
policies: [policy.yaml]
resources: [cms.yaml]
results:
- {policy: shop-only, rule: label, resources: [${refs}], result: fail}
`;
    writeFileSync(join(dir, 'a.test.yaml'), test('shop/ConfigMap/settings'));
    expect(runTestFiles([dir]).map((r) => [r.resource, r.result, r.ok])).toEqual([
      ['shop/ConfigMap/settings', 'fail', true],
    ]);
    writeFileSync(join(dir, 'a.test.yaml'), test('dev/configmap/settings'));
    expect(runTestFiles([dir]).map((r) => [r.resource, r.result, r.ok])).toEqual([
      ['dev/ConfigMap/settings', 'skip', false],
    ]);
    writeFileSync(join(dir, 'a.test.yaml'), test('ConfigMap/settings'));
    expect(() => runTestFiles([dir])).toThrow(
      /a\.test\.yaml: results\[0\]\.resources\[0\]: 2 objects are "ConfigMap\/settings": name one as Kind\/name or namespace\/Kind\/name \(shop\/ConfigMap\/settings, dev\/ConfigMap\/settings\)$/,
    );
  });
});

describe('annex test: bad input is one line naming the file, field or value', () => {
  const cases: [string, (dir: string, file: string) => string[], RegExp][] = [
    ['a path that is not there', (dir) => [join(dir, 'nope')], /nope: no such file or directory$/],
    [
      'a folder without test files',
      (dir) => [join(dir, 'policies')],
      /policies: no \*\.test\.yaml file in the folder$/,
    ],
    [
      'a policy file that is not there',
      (_, file) => (edit(file, '../../policies/pinned-images.yaml', 'gone.yaml'), [file]),
      /pinned-images\.test\.yaml: policies\[0\]: gone\.yaml: no such file or directory$/,
    ],
    [
      'an unknown policy',
      (_, file) => (edit(file, '- policy: pinned-images', '- policy: pinned'), [file]),
      /pinned-images\.test\.yaml: results\[0\]\.policy: no AdmissionPolicy "pinned" in policies \(pinned-images\)$/,
    ],
    [
      'an unknown rule',
      (_, file) => (edit(file, 'rule: init-containers', 'rule: init'), [file]),
      /results\[3\]\.rule: AdmissionPolicy "pinned-images" has no rule "init" \(containers, init-containers\)$/,
    ],
    [
      'an unknown object',
      (_, file) => (edit(file, '[Pod/latest]', '[Pod/newest]'), [file]),
      /results\[1\]\.resources\[0\]: no object "Pod\/newest" in resources \(Pod\/tagged, /,
    ],
    [
      'an unknown result word',
      (_, file) => (edit(file, 'result: skip', 'result: ignored'), [file]),
      /results\[5\]\.result: must be one of pass, fail, warn, skip, error, got "ignored"$/,
    ],
    [
      'an unknown field',
      (_, file) => (edit(file, 'result: skip', 'result: skip\n    severity: high'), [file]),
      /results\[5\]\.severity: unknown field$/,
    ],
    [
      'a missing field',
      (_, file) => (edit(file, /\nresources: .*\n/, '\n'), [file]),
      /pinned-images\.test\.yaml: resources: required$/,
    ],
    [
      'malformed YAML',
      (_, file) => (edit(file, 'results:', 'results: [\n'), [file]),
      /pinned-images\.test\.yaml/,
    ],
    [
      'an empty file',
      (_, file) => (writeFileSync(file, '# nothing yet\n'), [file]),
      /pinned-images\.test\.yaml: no Kubernetes object found$/,
    ],
    [
      'a field of the wrong type',
      (_, file) => (edit(file, /\npolicies: .*\n/, '\npolicies: pinned-images.yaml\n'), [file]),
      /pinned-images\.test\.yaml: policies: must be array$/,
    ],
    [
      'an AdmissionPolicy listed among the exceptions',
      (_, file) => (
        edit(
          file,
          /\nresources: /,
          '\nexceptions: [../../policies/host-network.yaml]\nresources: ',
        ),
        [file]
      ),
      /pinned-images\.test\.yaml: exceptions: AdmissionPolicy "host-network" in an exceptions file: list it in policies$/,
    ],
    [
      'another kind',
      (_, file) => (edit(file, 'kind: AdmissionPolicyTest', 'kind: Test'), [file]),
      /kind: must be "AdmissionPolicyTest", got "Test"$/,
    ],
    [
      'an unknown --output',
      (_, file) => ['-o', 'xml', file],
      /--output: must be table or junit, got "xml"$/,
    ],
  ];
  // Each: a UserError (what main.ts prints as one `annex: ` line, exit 1) in-process;
  // a few also through the built CLI, to see that line and no stack trace.
  const viaCli = new Set([
    'a policy file that is not there',
    'an unknown result word',
    'malformed YAML',
    'an unknown --output',
  ]);
  it.each(cases)('%s', async (name, args, line) => {
    const dir = copy();
    const file = join(dir, 'test', 'policies', 'pinned-images.test.yaml');
    const argv = args(dir, file);
    if (!argv.includes('-o')) {
      expect(() => runTestFiles(argv)).toThrow(UserError);
      expect(() => runTestFiles(argv)).toThrow(line);
    }
    if (!viaCli.has(name)) return;
    const r = await runCli(['test', ...argv]);
    expect(expectOneLineError(r)).toMatch(line);
    expect(r.stdout).toBe('');
  });
});

describe('the format reference in docs/policies.md', () => {
  it('is the rendering of policy-tests-schema.ts (npm run manifests writes it)', () => {
    const page = readFileSync(join(repo, 'docs', 'policies.md'), 'utf8');
    const [, section] =
      /<!-- generated: annex test format -->\n([\s\S]*?)\n<!-- end generated -->/.exec(page) ?? [];
    expect(section).toBe(formatReference());
  });
});
