import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../core/types.js';
import { createRequest } from '../cli/create-request.js';
import { evaluateAsInstalled } from './as-installed.js';
import { compilePolicy, type CompiledPolicy } from './compile.js';
import { evaluate } from './evaluate.js';

const policy = (name: string, spec: Record<string, unknown>): CompiledPolicy =>
  compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec,
  });

const pod = (name: string, container: Record<string, unknown> = {}) =>
  createRequest({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'shop' },
    spec: { containers: [{ name: 'c', image: 'x:1', ...container }] },
  } as KubeObject);

const match = { kinds: ['Pod'] };
const names = (name: string) =>
  policy(name, {
    match,
    validate: [{ name: 'label', path: '$.metadata.name', nameRule: 'dns1123Label' }],
  });
// `..` has no CEL form: these stay on annex's webhook.
const needsCpu = policy('needs-cpu', {
  match,
  validate: [{ name: 'cpu', path: '$..resources.requests.cpu', required: true }],
});
const cpuOnApiServer = policy('cpu-default', {
  match,
  mutate: [
    {
      name: 'cpu',
      path: '$.spec.containers[*]',
      setIfAbsent: { resources: { requests: { cpu: '100m' } } },
    },
  ],
});
const DOTS = 'metadata.name: Invalid value: "a.b": must not contain dots';

describe('evaluateAsInstalled: the answer of the API server with the policies installed', () => {
  it("a policy CEL expresses answers in the ValidatingAdmissionPolicy plugin's words", () => {
    const e = evaluateAsInstalled([names('n')], pod('a.b'));
    expect(e.allowed).toBe(false);
    expect(e.status).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `pods "a.b" is forbidden: ValidatingAdmissionPolicy 'annex-n' with binding 'annex-n-binding' denied request: ${DOTS}`,
      reason: 'Invalid',
      details: {
        name: 'a.b',
        kind: 'pods',
        causes: [
          {
            message: `ValidatingAdmissionPolicy 'annex-n' with binding 'annex-n-binding' denied request: ${DOTS}`,
          },
        ],
      },
      code: 422,
    });
  });

  it('with native off, or for an Audit policy, it is the webhook: evaluate() as it is', () => {
    // What the webhook answers: evaluate() without what only scans read (`matched`).
    const asWebhook = (e: ReturnType<typeof evaluate>) => {
      const answer: Partial<typeof e> = { ...e };
      delete answer.matched;
      return { ...answer, otherDenials: [] };
    };
    const off = evaluateAsInstalled([names('n')], pod('a.b'), { native: false });
    expect(off).toEqual(asWebhook(evaluate([names('n')], pod('a.b'))));
    const audit = policy('audit', {
      match,
      actions: ['Audit'],
      validate: [{ name: 'label', path: '$.metadata.name', nameRule: 'dns1123Label' }],
    });
    expect(evaluateAsInstalled([audit], pod('a.b'))).toEqual(
      asWebhook(evaluate([audit], pod('a.b'))),
    );
  });

  it('a VAP refusal stops the request before the webhook: only its text, no webhook causes', () => {
    const e = evaluateAsInstalled([needsCpu, names('n')], pod('a.b'));
    expect(e.status?.message).toContain("ValidatingAdmissionPolicy 'annex-n'");
    expect(e.status?.message).not.toContain('cpu');
    // Both verdicts are still decisions (what annex check's JSON reports).
    expect(e.decisions.map((d) => d.policy)).toEqual(['n', 'needs-cpu']);
    const webhookOnly = evaluateAsInstalled([needsCpu, names('n')], pod('ok'));
    expect(webhookOnly.status?.message).toBe(
      'Pod "ok" is invalid: [..].resources.requests[cpu]: Required value',
    );
  });

  it("the webhook validates what the API server's MutatingAdmissionPolicy set", () => {
    expect(evaluateAsInstalled([needsCpu], pod('ok')).allowed).toBe(false);
    const e = evaluateAsInstalled([needsCpu, cpuOnApiServer], pod('ok'));
    expect(e.allowed).toBe(true);
    expect((e.mutated as any).spec.containers[0].resources.requests.cpu).toBe('100m');
  });

  it('several VAPs refusing: the API server names one, in no fixed order; the others are listed', () => {
    const e = evaluateAsInstalled([names('first'), names('second')], pod('a.b'));
    expect(e.status?.message).toContain("ValidatingAdmissionPolicy 'annex-first'");
    expect(e.otherDenials).toEqual(['second']);
  });

  it("Warn: the VAP's warning, all causes in one, before the webhook's", () => {
    const warnNames = policy('warn-names', {
      match,
      actions: ['Warn'],
      validate: [
        { name: 'label', path: '$.metadata.name', nameRule: 'dns1123Label' },
        { name: 'app', path: "$.metadata.labels['app']", required: true },
      ],
    });
    const warnCpu = policy('warn-cpu', {
      match,
      actions: ['Warn'],
      validate: [{ name: 'cpu', path: '$..resources.requests.cpu', required: true }],
    });
    const e = evaluateAsInstalled([warnCpu, warnNames], pod('a.b'));
    expect(e.allowed).toBe(true);
    expect(e.warnings).toEqual([
      `Validation failed for ValidatingAdmissionPolicy 'annex-warn-names' with binding 'annex-warn-names-binding': [${DOTS}, metadata.labels[app]: Required value]`,
      'warn-cpu: [..].resources.requests[cpu]: Required value',
    ]);
  });
});
