import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Status } from '../core/status.js';
import { checkObject, formatResult, kubectlInvalidText, register } from './check.js';
import { loadPolicies } from '../policy/load.js';
import type { JsonObject } from '../admission/defaults/index.js';

const dir = mkdtempSync(join(tmpdir(), 'annex-check-'));
const write = (name: string, text: string) => {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
};

const labelPolicy = write(
  'p/labels.yaml',
  `apiVersion: policy.annex.dev/v1alpha1
kind: AdmissionPolicy
metadata: {name: cm-names}
spec:
  match: {kinds: [ConfigMap]}
  validate:
  - {name: label, path: $.metadata.name, nameRule: dns1123Label}
`,
);
const requestsPolicy = write(
  'p/requests.yaml',
  `apiVersion: policy.annex.dev/v1alpha1
kind: AdmissionPolicy
metadata: {name: requests}
spec:
  match: {kinds: [Pod]}
  mutate:
  - name: r
    path: $.spec.containers[*]
    setIfAbsent: {resources: {requests: {cpu: 100m}}}
`,
);
const cm = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
const opts = { namespace: 'default' };

function status(causes: { field: string; message: string }[], name = 'web'): Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: '',
    reason: 'Invalid',
    code: 422,
    details: { name, kind: 'Deployment', group: 'apps', causes },
  };
}

describe('kubectlInvalidText: what kubectl prints for a 422 Invalid', () => {
  it('one cause on the same line; several as a list, duplicates once', () => {
    const a = { field: 'metadata.name', message: 'Invalid value: "a.b": must not contain dots' };
    const b = { field: 'spec.replicas', message: 'Invalid value: -1: must be >= 0' };
    expect(kubectlInvalidText(status([a]))).toBe(
      'The Deployment "web" is invalid: metadata.name: Invalid value: "a.b": must not contain dots',
    );
    expect(kubectlInvalidText(status([a, b, a]))).toBe(
      'The Deployment "web" is invalid: \n* metadata.name: Invalid value: "a.b": must not contain dots\n* spec.replicas: Invalid value: -1: must be >= 0',
    );
    expect(kubectlInvalidText(status([], 'x\ty'))).toBe('The Deployment "x\\ty" is invalid');
  });
});

describe('checkObject', () => {
  const policies = loadPolicies([join(dir, 'p')]);

  it('allowed: the line kubectl apply --dry-run=server prints', () => {
    const r = checkObject(cm('web'), policies, 'f.yaml', opts);
    expect(r).toMatchObject({
      allowed: true,
      message: 'configmap/web created (server dry run)',
      namespace: 'default',
      warnings: [],
      decisions: [],
    });
    expect(r.patch).toBeUndefined();
    const d = checkObject(
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web' },
        spec: { template: { spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
      },
      policies,
      'f.yaml',
      opts,
    );
    expect(d.message).toBe('deployment.apps/web created (server dry run)');
  });

  it("denied by a policy the API server enforces (policy.native): kubectl's text for the VAP's 422", () => {
    const r = checkObject(cm('web.front'), policies, 'f.yaml', opts);
    expect(r.allowed).toBe(false);
    // kubectl prints the ValidatingAdmissionPolicy's refusal as an Invalid with one cause
    // that has no field: hence `: : `.
    expect(r.message).toBe(
      `The configmaps "web.front" is invalid: : ValidatingAdmissionPolicy 'annex-cm-names' with binding 'annex-cm-names-binding' denied request: metadata.name: Invalid value: "web.front": must not contain dots`,
    );
    expect(r.status).toMatchObject({
      code: 422,
      reason: 'Invalid',
      message: `configmaps "web.front" is forbidden: ValidatingAdmissionPolicy 'annex-cm-names' with binding 'annex-cm-names-binding' denied request: metadata.name: Invalid value: "web.front": must not contain dots`,
    });
    expect(r.decisions).toMatchObject([{ policy: 'cm-names', rule: 'label', action: 'Deny' }]);
  });

  it("denied by a policy on annex's webhook (policy.native off): kubectl's text for the webhook's 422", () => {
    const r = checkObject(cm('web.front'), policies, 'f.yaml', { ...opts, native: false });
    expect(r.allowed).toBe(false);
    expect(r.message).toBe(
      'The ConfigMap "web.front" is invalid: metadata.name: Invalid value: "web.front": must not contain dots',
    );
    expect(r.decisions).toMatchObject([{ policy: 'cm-names', rule: 'label', action: 'Deny' }]);
  });

  it('refused by the API server itself before any policy (the ConfigMap name rule)', () => {
    const r = checkObject(cm('Web'), policies, 'f.yaml', opts);
    expect(r.message).toMatch(
      /^The ConfigMap "Web" is invalid: metadata\.name: Invalid value: "Web": a lowercase RFC 1123 subdomain /,
    );
    expect(r.decisions).toEqual([]);
    expect(checkObject({ apiVersion: 'v1', kind: 'ConfigMap' }, [], 'f', opts).message).toBe(
      'The ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
    );
  });

  it('mutated: the patch from the defaulted object, printed below the result', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'shop' },
      spec: { containers: [{ name: 'c', image: 'x:1' }] },
    } as JsonObject;
    const r = checkObject(pod, policies, 'f.yaml', opts);
    expect(r.allowed).toBe(true);
    expect(r.namespace).toBe('shop');
    expect(r.patch).toEqual([
      { op: 'add', path: '/spec/containers/0/resources/requests', value: { cpu: '100m' } },
    ]);
    expect(formatResult(r)).toBe(
      'pod/p created (server dry run)\n  patch:\n    add /spec/containers/0/resources/requests: {"cpu":"100m"}\n',
    );
  });
});

describe('annex check command', () => {
  afterEach(() => {
    process.exitCode = undefined;
  });
  const run = async (...args: string[]) => {
    const program = new Command().exitOverride();
    register(program);
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      await program.parseAsync(['node', 'annex', 'check', ...args]);
      return out.mock.calls.map((c) => String(c[0])).join('');
    } finally {
      out.mockRestore();
    }
  };
  const objects = write(
    'objects.yaml',
    `apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b.c}}\n`,
  );

  it('prints every object of a List, and sets exit code 1 on a denial', async () => {
    const out = await run('-p', labelPolicy, '-p', requestsPolicy, objects);
    expect(out).toBe(
      `configmap/a created (server dry run)\nThe configmaps "b.c" is invalid: : ValidatingAdmissionPolicy 'annex-cm-names' with binding 'annex-cm-names-binding' denied request: metadata.name: Invalid value: "b.c": must not contain dots\n`,
    );
    expect(process.exitCode).toBe(1);
    const onWebhook = await run('-p', labelPolicy, '-p', requestsPolicy, objects, '--no-native');
    expect(onWebhook).toBe(
      'configmap/a created (server dry run)\nThe ConfigMap "b.c" is invalid: metadata.name: Invalid value: "b.c": must not contain dots\n',
    );
  });

  it('exit code 0 when everything is allowed; --output json for CI', async () => {
    const ok = write('ok.json', JSON.stringify(cm('ok')));
    const out = JSON.parse(await run('-p', labelPolicy, ok, '-o', 'json'));
    expect(out).toMatchObject({
      allowed: true,
      denied: 0,
      results: [{ source: ok, kind: 'ConfigMap', name: 'ok', allowed: true }],
    });
    expect(process.exitCode).toBeUndefined();
  });

  it('honours a PolicyException found beside the policies, in its namespace only, and names it', async () => {
    const exception = (namespace?: string) =>
      write(
        `x/${namespace ?? 'none'}.yaml`,
        `apiVersion: policy.annex.dev/v1alpha1
kind: PolicyException
metadata: {name: legacy${namespace ? `, namespace: ${namespace}` : ''}}
spec:
  reason: named before the rule
  exceptions: [{policyName: cm-names, ruleNames: [label]}]
  match: {any: [{resources: {kinds: [ConfigMap], names: ['b.*']}}]}
`,
      );
    // No namespace: it is in -n's, as the objects are.
    const out = await run('-p', labelPolicy, '-p', exception(), objects);
    expect(out).toBe(
      'configmap/a created (server dry run)\nconfigmap/b.c created (server dry run)\n  exempted: cm-names: label by PolicyException default/legacy\n',
    );
    expect(process.exitCode).toBeUndefined();
    // Another namespace's exception exempts nothing here; as in the cluster, a policy an
    // exception names is on annex's webhook, so the denial is the webhook's.
    const elsewhere = await run('-p', labelPolicy, '-p', exception('shop'), objects);
    expect(elsewhere).toBe(
      'configmap/a created (server dry run)\nThe ConfigMap "b.c" is invalid: metadata.name: Invalid value: "b.c": must not contain dots\n',
    );
    expect(process.exitCode).toBe(1);
  });

  it('refuses a bad flag as a UserError', async () => {
    await expect(run('-p', labelPolicy, objects, '-o', 'xml')).rejects.toThrow(
      '--output: must be text or json',
    );
    await expect(run('-p', '-', '-')).rejects.toThrow('- (stdin) can be read only once');
    await expect(run(objects)).rejects.toThrow(
      '-p, --policy / --vap: name at least one AdmissionPolicy or ValidatingAdmissionPolicy',
    );
  });

  describe("--vap: the cluster's own ValidatingAdmissionPolicies", () => {
    const vaps = write(
      'vap/cm.yaml',
      `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: cm-data}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "!object.metadata.name.startsWith('b')"
    messageExpression: "'name ' + object.metadata.name + ' starts with b'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: cm-data-deny}
spec: {policyName: cm-data, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: cm-data-warn}
spec: {policyName: cm-data, validationActions: [Warn, Audit]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: unbound}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations: [{expression: 'false'}]
`,
    );
    it("prints the API server's refusal, its warnings and the audit records; a note for an unbound policy", async () => {
      const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        const out = await run('--vap', vaps, objects);
        expect(out).toBe(
          [
            'configmap/a created (server dry run)',
            "Warning: Validation failed for ValidatingAdmissionPolicy 'cm-data' with binding 'cm-data-warn': name b.c starts with b",
            `The configmaps "b.c" is invalid: : ValidatingAdmissionPolicy 'cm-data' with binding 'cm-data-deny' denied request: name b.c starts with b`,
            "  audit: ValidatingAdmissionPolicy 'cm-data' with binding 'cm-data-warn': name b.c starts with b",
            '',
          ].join('\n'),
        );
        expect(process.exitCode).toBe(1);
        expect(err.mock.calls.map((c) => String(c[0])).join('')).toBe(
          `annex: note: ${vaps}: ValidatingAdmissionPolicy 'unbound' has no binding: it does nothing\n`,
        );
      } finally {
        err.mockRestore();
      }
    });
    it('beside -p: both answer; bad input is one line naming the file', async () => {
      const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        // Both deny b.c, in the same plugin: the API server names one, in no fixed order.
        const out = await run('-p', labelPolicy, '--vap', vaps, objects);
        expect(out.split('\n').slice(2, 4)).toEqual([
          `The configmaps "b.c" is invalid: : ValidatingAdmissionPolicy 'annex-cm-names' with binding 'annex-cm-names-binding' denied request: metadata.name: Invalid value: "b.c": must not contain dots`,
          "  or denied by ValidatingAdmissionPolicy 'cm-data' with binding 'cm-data-deny' (the API server names one, in no fixed order)",
        ]);
        const bad = write('vap/bad.yaml', `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n`);
        await expect(run('--vap', bad, objects)).rejects.toThrow(
          `${bad}: v1 ConfigMap 'x' is not a ValidatingAdmissionPolicy or ValidatingAdmissionPolicyBinding of admissionregistration.k8s.io/v1`,
        );
        await expect(run('--vap', join(dir, 'none.yaml'), objects)).rejects.toThrow(
          'none.yaml: no such file or directory',
        );
      } finally {
        err.mockRestore();
      }
    });
  });
});
