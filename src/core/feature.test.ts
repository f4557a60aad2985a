import { describe, expect, expectTypeOf, it } from 'vitest';
import { allow } from '../admission/verdict.js';
import { mutatingWebhook, validatingWebhook, type WebhookInit } from '../admission/webhook.js';
import { UserError } from '../errors.js';
import { defineFeature, validateFeatures, type Feature } from './feature.js';
import type { Webhook } from './webhook.js';

const hook = (name: string, more: Partial<WebhookInit> = {}) =>
  validatingWebhook({ name, match: { kinds: ['Pod'] }, admit: () => allow(), ...more });
const feature = (name: string, more: Partial<Feature> = {}): Feature => ({ name, ...more });
const refusal = (features: Feature[]) => {
  try {
    validateFeatures(features);
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    return (e as Error).message;
  }
  return 'accepted';
};

describe('validateFeatures: declarations that would collide, refused in one line', () => {
  it('accepts distinct webhooks, and one name as a validating and a mutating webhook', () => {
    const policies = [
      hook('policies.annex.dev', { configuration: 'annex-policies' }),
      mutatingWebhook({
        name: 'policies.annex.dev',
        configuration: 'annex-policies',
        match: { kinds: ['Pod'] },
        admit: () => allow(),
      }),
    ];
    expect(
      refusal([
        feature('a', { webhooks: policies }),
        feature('b', { webhooks: [hook('x.b.com')] }),
      ]),
    ).toBe('accepted');
  });

  it('the same webhook declared by two features, or twice by one', () => {
    const twice = [
      feature('guards', { webhooks: [hook('lb-guard.example.com')] }),
      feature('dup', { webhooks: [hook('lb-guard.example.com')] }),
    ];
    expect(refusal(twice)).toBe(
      'validating webhook "lb-guard.example.com" is declared by features "guards" and "dup" (served at /validate/lb-guard.example.com, registered as ValidatingWebhookConfiguration annex-lb-guard): declare it once',
    );
    expect(refusal([feature('guards', { webhooks: [hook('g.x.io'), hook('g.x.io')] })])).toContain(
      'is declared twice by feature "guards"',
    );
  });

  it("a user's webhook taking a built-in's name (and so its configuration)", () => {
    expect(
      refusal([
        feature('names', { webhooks: [hook('names.annex.dev')] }),
        feature('validating-names', { webhooks: [hook('names.annex.dev')] }),
      ]),
    ).toBe(
      'validating webhook "names.annex.dev" is declared by features "names" and "validating-names" (served at /validate/names.annex.dev, registered as ValidatingWebhookConfiguration annex-names): declare it once',
    );
  });

  it('two names with one first label: two URL paths, but one default configuration name', () => {
    // Paths are whole names (/validate/x.a.com, /validate/x.b.com); the default configuration
    // is still named after the first label, so one of them names another.
    expect(
      refusal([
        feature('a', { webhooks: [hook('x.a.com')] }),
        feature('b', { webhooks: [hook('x.b.com')] }),
      ]),
    ).toBe(
      `validating webhook "x.a.com" (feature "a") and validating webhook "x.b.com" (feature "b") would both be registered as ValidatingWebhookConfiguration annex-x, the second replacing the first: give one another configuration`,
    );
    expect(
      refusal([
        feature('a', { webhooks: [hook('x.a.com')] }),
        feature('b', { webhooks: [hook('x.b.com', { configuration: 'annex-x-b' })] }),
      ]),
    ).toBe('accepted');
  });

  it('two webhooks in one configuration object', () => {
    expect(
      refusal([
        feature('a', { webhooks: [hook('one.a.com', { configuration: 'shared' })] }),
        feature('b', { webhooks: [hook('two.b.com', { configuration: 'shared' })] }),
      ]),
    ).toBe(
      'validating webhook "one.a.com" (feature "a") and validating webhook "two.b.com" (feature "b") would both be registered as ValidatingWebhookConfiguration shared, the second replacing the first: give one another configuration',
    );
  });

  it('groups, feature names, and a feature without one', () => {
    const group = { group: 'g.example.com', versions: ['v1'], resources: [] } as never;
    expect(refusal([feature('a', { groups: [group] }), feature('b', { groups: [group] })])).toBe(
      'features "a" and "b" both serve group g.example.com',
    );
    expect(refusal([feature('a'), feature('a')])).toBe('two features are named "a"');
    expect(refusal([feature('')])).toBe('every feature needs a non-empty name');
  });
});

describe('defineFeature: ctx.config typed by inference', () => {
  it('from config.defaults, from a type argument, and unknown without a config', () => {
    const inferred = defineFeature({
      name: 'guard',
      webhooks: [hook('guard.x.io')],
      config: { schema: { type: 'object' }, defaults: { threshold: 3, labels: ['team'] } },
      start(ctx) {
        expectTypeOf(ctx.config).toEqualTypeOf<{ threshold: number; labels: string[] }>();
      },
    });
    // The declaration keeps its own type (webhooks is not optional here).
    expectTypeOf(inferred.webhooks).toEqualTypeOf<Webhook[]>();
    defineFeature<{ mode: 'warn' | 'deny' }>({
      name: 'explicit',
      config: { schema: { type: 'object' }, defaults: { mode: 'warn' } },
      start(ctx) {
        expectTypeOf(ctx.config.mode).toEqualTypeOf<'warn' | 'deny'>();
      },
    });
    const plain = defineFeature({
      name: 'plain',
      start(ctx) {
        expectTypeOf(ctx.config).toBeUnknown();
      },
    });
    // Every one is a Feature annex can start.
    const all: Feature[] = [inferred, plain];
    expect(all.map((f) => f.name)).toEqual(['guard', 'plain']);
  });
});
