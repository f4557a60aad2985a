import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../../admission/review.js';
import { compileToCel } from '../cel/compile.js';
import { compilePolicy } from '../compile.js';
import { evaluate } from '../evaluate.js';

const spec = (over: Record<string, unknown>) => ({
  apiVersion: 'policy.annex.dev/v1alpha1',
  kind: 'AdmissionPolicy',
  metadata: { name: 'p' },
  spec: { match: { kinds: ['apps/Deployment'] }, ...over },
});
const policy = (over: Record<string, unknown>) => compilePolicy(spec(over));

function deploy(replicas: number, labels: Record<string, string> = {}): AdmissionRequest {
  const object = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop', labels },
    spec: { replicas, template: { spec: { containers: [{ name: 'c', image: 'nginx:1' }] } } },
  };
  return {
    uid: 'u',
    kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
    resource: { group: 'apps', version: 'v1', resource: 'deployments' },
    name: 'web',
    namespace: 'shop',
    operation: 'CREATE',
    userInfo: { username: 'alice' },
    object,
    oldObject: null,
  } as unknown as AdmissionRequest;
}

const messages = (e: ReturnType<typeof evaluate>) =>
  e.decisions.flatMap((d) => d.causes.map((c) => c.message));

describe('CEL rules', () => {
  const limit = {
    validate: [{ name: 'replicas', expression: 'object.spec.replicas <= 10' }],
  };

  it('allows and denies, with the default message of VAP', () => {
    const p = policy(limit);
    expect(evaluate([p], deploy(3)).allowed).toBe(true);
    const e = evaluate([p], deploy(11));
    expect(e.allowed).toBe(false);
    expect(messages(e)).toEqual(['failed expression: object.spec.replicas <= 10']);
    expect(e.status?.message).toBe(
      'Deployment.apps "web" is invalid: replicas: failed expression: object.spec.replicas <= 10',
    );
  });

  it('integers are CEL ints (int arithmetic works)', () => {
    const p = policy({ validate: [{ name: 'r', expression: 'object.spec.replicas + 1 <= 5' }] });
    expect(evaluate([p], deploy(4)).allowed).toBe(true);
    expect(evaluate([p], deploy(5)).allowed).toBe(false);
  });

  it('message, then messageExpression, with the fallback to message', () => {
    const p = policy({
      validate: [
        {
          name: 'r',
          expression: 'object.spec.replicas <= 10',
          message: 'too many',
          messageExpression: "'replicas ' + string(object.spec.replicas) + ' > 10'",
        },
        { name: 's', expression: 'false', message: 'plain' },
        // An erroring messageExpression falls back to message, as VAP does.
        { name: 't', expression: 'false', message: 'fallback', messageExpression: 'object.nope' },
      ],
    });
    expect(messages(evaluate([p], deploy(12)))).toEqual(['replicas 12 > 10', 'plain', 'fallback']);
  });

  it('variables, reusable and in order; namespaceObject and request', () => {
    const p = policy({
      variables: [
        {
          name: 'labels',
          expression: 'has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels : {}',
        },
        {
          name: 'batch',
          expression: "'tier' in variables.labels && variables.labels.tier == 'batch'",
        },
      ],
      validate: [
        {
          name: 'r',
          expression: 'variables.batch || object.spec.replicas <= 10',
          messageExpression:
            "request.userInfo.username + ' asked for ' + string(object.spec.replicas)",
        },
      ],
    });
    const batch = { namespaceLabels: { tier: 'batch' } };
    expect(evaluate([p], deploy(50), batch).allowed).toBe(true);
    const e = evaluate([p], deploy(50), { namespaceLabels: { tier: 'web' } });
    expect(messages(e)).toEqual(['alice asked for 50']);
  });

  it('matchConditions: all true to apply; an error follows failurePolicy', () => {
    const over = (failurePolicy: string, expression: string) =>
      policy({
        failurePolicy,
        matchConditions: [{ name: 'not_exempt', expression }],
        validate: [{ name: 'r', expression: 'false', message: 'no' }],
      });
    const exempt = "!('exempt' in object.metadata.labels)";
    expect(evaluate([over('Fail', exempt)], deploy(1, { exempt: 'y' })).allowed).toBe(true);
    expect(evaluate([over('Fail', exempt)], deploy(1, { other: 'y' })).allowed).toBe(false);
    const bad = evaluate([over('Fail', 'object.nope == 1')], deploy(1));
    expect(bad.allowed).toBe(false);
    expect(messages(bad)[0]).toMatch(
      /^Internal error: rule "matchConditions": expression 'object.nope == 1' resulted in error: /,
    );
    expect(evaluate([over('Ignore', 'object.nope == 1')], deploy(1)).allowed).toBe(true);
  });

  it('an evaluation error follows failurePolicy; a variable error fails what reads it', () => {
    const p = (failurePolicy: string) =>
      policy({
        failurePolicy,
        variables: [{ name: 'bad', expression: 'object.spec.nope' }],
        validate: [
          { name: 'reads', expression: 'variables.bad == 1' },
          { name: 'other', expression: 'true' },
        ],
      });
    const e = evaluate([p('Fail')], deploy(1));
    expect(e.decisions.map((d) => d.rule)).toEqual(['reads']);
    // The API server's words (the differential test found them): the reading expression, the variable.
    expect(messages(e)[0]).toContain(
      `expression 'variables.bad == 1' resulted in error: composited variable "bad" fails to evaluate: no such key: nope`,
    );
    expect(evaluate([p('Ignore')], deploy(1)).allowed).toBe(true);
  });

  it("errors in cel-go's words, as the API server quotes them", () => {
    const error = (expression: string) =>
      messages(evaluate([policy({ validate: [{ name: 'r', expression }] })], deploy(0)))[0];
    expect(error('object.spec.nope == 1')).toBe(
      'Internal error: rule "r": expression \'object.spec.nope == 1\' resulted in error: no such key: nope',
    );
    expect(error('1 / object.spec.replicas == 1')).toContain('resulted in error: division by zero');
    expect(error('1 % object.spec.replicas == 1')).toContain('resulted in error: modulus by zero');
  });

  it('Kubernetes libraries: strings, lists, regex, sets', () => {
    const holds = (expression: string) =>
      evaluate([policy({ validate: [{ name: 'r', expression }] })], deploy(3)).allowed;
    expect(holds("object.metadata.name.upperAscii() == 'WEB'")).toBe(true);
    expect(holds("'a,b'.split(',') == ['a', 'b']")).toBe(true);
    expect(holds('[1, 2, 3].isSorted() && [1, 2, 3].sum() == 6 && [3, 1].min() == 1')).toBe(true);
    expect(holds("[1, 2].indexOf(2) == 1 && ['a', 'b', 'a'].lastIndexOf('a') == 2")).toBe(true);
    expect(holds("'nginx:1.2'.find('[0-9.]+$') == '1.2'")).toBe(true);
    expect(holds("'a1b22'.findAll('[0-9]+') == ['1', '22']")).toBe(true);
    expect(holds("'a1b22'.findAll('[0-9]+', 1) == ['1']")).toBe(true);
    expect(holds('sets.contains([1, 2, 3], [1, 3]) && !sets.intersects([1], [2])')).toBe(true);
    expect(holds('sets.equivalent([1, 2], [2, 1, 1])')).toBe(true);
    expect(
      holds("object.spec.template.spec.containers.all(c, c.image.matches('^[a-z]+:[0-9]+$'))"),
    ).toBe(true);
    expect(holds('[3, 1].isSorted()')).toBe(false);
  });

  it('compile errors: syntax, an unimplemented function (named), an undeclared variable', () => {
    const fault = (validate: unknown[], variables: unknown[] = []) => {
      try {
        policy({ validate, variables });
        return '';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(fault([{ name: 'r', expression: 'object.spec.(' }])).toMatch(
      /rule "r": expression: syntax error/,
    );
    expect(fault([{ name: 'r', expression: 'lists.range(3).sort() == [0, 1, 2]' }])).toBe(
      'AdmissionPolicy "p": rule "r": expression: functions sort(), lists.range() are not implemented by annex\'s in-process CEL',
    );
    expect(
      fault([{ name: 'r', expression: "format.dns1123Label().validate('a').hasValue()" }]),
    ).toContain('format.dns1123Label()');
    expect(fault([{ name: 'r', expression: 'variables.nope' }])).toContain(
      'undefined variable variables.nope',
    );
    expect(fault([{ name: 'r', expression: 'true', path: '$.x' }])).toContain(
      'set path, or expression',
    );
    expect(fault([{ name: 'r', required: true }])).toContain('set path, or expression');
  });

  it('compiles to a VAP exactly as written', () => {
    const p = policy({
      variables: [{ name: 'n', expression: 'object.spec.replicas' }],
      matchConditions: [{ name: 'creates', expression: "request.operation == 'CREATE'" }],
      validate: [
        { name: 'r', expression: 'variables.n <= 10', message: 'm', reason: 'Forbidden' },
        { name: 's', expression: 'true', messageExpression: "'x'" },
      ],
    });
    const out = compileToCel(p);
    expect('reason' in out).toBe(false);
    const vapSpec = (out as { vap: { spec: Record<string, unknown> } }).vap.spec;
    expect(vapSpec.variables).toEqual([{ name: 'n', expression: 'object.spec.replicas' }]);
    expect(vapSpec.matchConditions).toEqual([
      { name: 'creates', expression: "request.operation == 'CREATE'" },
    ]);
    expect(vapSpec.validations).toEqual([
      { expression: 'variables.n <= 10', message: 'm', reason: 'Forbidden' },
      { expression: 'true', messageExpression: "'x'", reason: 'Invalid' },
    ]);
  });

  it('a policy mixing CEL and path rules stays on the webhook', () => {
    const p = policy({
      validate: [
        { name: 'r', expression: 'true' },
        { name: 'n', path: '$.metadata.name', nameRule: 'dns1123Label' },
      ],
    });
    expect(compileToCel(p)).toEqual({
      reason: 'rule "n" runs in the webhook: path rules beside CEL rules',
    });
  });
});

describe('CEL rules as installed (annex check, native)', () => {
  it('answers as the VAP: the first failed validation, its bare message and reason', async () => {
    const { evaluateAsInstalled } = await import('../as-installed.js');
    const p = policy({
      validate: [
        { name: 'a', expression: 'object.spec.replicas < 5', message: 'few', reason: 'Forbidden' },
        { name: 'b', expression: 'false', message: 'never' },
      ],
    });
    const e = evaluateAsInstalled([p], deploy(7));
    expect(e.status?.code).toBe(403);
    expect(e.status?.message).toBe(
      "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'annex-p' with binding 'annex-p-binding' denied request: few",
    );
  });
});
