// A denial's size does not follow the object's: values over 1 KiB are not quoted, at most
// 100 causes in 31 KiB are listed, warnings are cut as the API server's recorder cuts them.
import { describe, expect, it } from 'vitest';
import { configMapRequest } from '../../test/unit/configmap-request.js';
import type { Status } from '../core/status.js';
import {
  boundCauses,
  boundWarnings,
  MAX_CAUSES,
  MAX_CAUSES_BYTES,
  MAX_QUOTED_VALUE_BYTES,
  WARNING_ITEM_RUNES,
  WARNINGS_TOTAL_RUNES,
} from './bounds.js';
import { compilePolicy, type CompiledPolicy } from './compile.js';
import { evaluate } from './evaluate.js';
import { decide } from './engine.js';

function policy(name: string, spec: Record<string, unknown>): CompiledPolicy {
  return compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec: { match: { kinds: ['ConfigMap'] }, ...spec },
  });
}

const request = configMapRequest;

const causesOf = (s: Status | undefined) => s?.details?.causes ?? [];

describe('the case of the issue: 300 failing rules on a 900 KB value', () => {
  // 5 policies of 60 rules (a policy holds at most 64), each failing on the one value.
  const policies = [0, 1, 2, 3, 4].map((p) =>
    policy(`big-${p}`, {
      actions: ['Deny', 'Warn'],
      validate: Array.from({ length: 60 }, (_, r) => ({
        name: `r${r}`,
        path: '$.data.v',
        schema: { type: 'integer', description: `rule ${p}.${r}` },
        message: `must be a number (rule ${p}.${r})`,
      })),
    }),
  );
  const big = request({ v: 'x'.repeat(900 * 1024) });

  it('is answered in under 1 MB and 100 ms of CPU (was 277 MB and seconds)', () => {
    decide(policies, request({ v: 'warm' }), {});
    const cpu = process.cpuUsage();
    const { verdict } = decide(policies, big, {});
    const answer = JSON.stringify({ response: { uid: 'u', ...verdict } });
    const used = process.cpuUsage(cpu);
    const ms = (used.user + used.system) / 1000;
    const bytes = Buffer.byteLength(answer);
    expect(bytes, `${bytes} bytes`).toBeLessThan(1024 * 1024);
    expect(ms, `${ms} ms of CPU`).toBeLessThan(100);
    expect(verdict.allowed).toBe(false);
    const status = verdict.allowed ? undefined : verdict.status;
    expect(Buffer.byteLength(status?.message ?? '')).toBeLessThanOrEqual(32 * 1024);
    const causes = causesOf(status);
    expect(causes.length).toBe(MAX_CAUSES + 1);
    expect(causes[0]?.message).toBe(
      'Invalid value: <value omitted: 921600 bytes>: must be a number (rule 0.0)',
    );
    expect(causes.at(-1)).toEqual({
      reason: 'FieldValueTooMany',
      field: '',
      message: 'and 200 more causes not shown',
    });
    expect(status?.message).toContain(', : and 200 more causes not shown]');
    const warnings = verdict.warnings ?? [];
    expect(warnings.join('').length).toBeLessThanOrEqual(WARNINGS_TOTAL_RUNES + WARNING_ITEM_RUNES);
  });
});

describe('a failing value', () => {
  const onV = policy('t', {
    validate: [{ name: 'n', path: '$.data.v', schema: { type: 'integer' } }],
  });
  const first = (v: unknown) => causesOf(evaluate([onV], request({ v })).status)[0]?.message;

  it(`is quoted up to ${MAX_QUOTED_VALUE_BYTES} bytes, as field.Invalid prints it`, () => {
    const v = 'é'.repeat(MAX_QUOTED_VALUE_BYTES / 2);
    expect(first(v)).toBe(`Invalid value: "${v}": must be integer`);
    expect(first({ a: 'x' })).toBe('Invalid value: {"a":"x"}: must be integer');
  });

  it('over that, is named by its size alone', () => {
    expect(first(`${'é'.repeat(MAX_QUOTED_VALUE_BYTES / 2)}x`)).toBe(
      'Invalid value: <value omitted: 1025 bytes>: must be integer',
    );
    const obj = { list: Array.from({ length: 200 }, (_, i) => `item-${i}`) };
    expect(first(obj)).toBe(
      `Invalid value: <value omitted: ${JSON.stringify(obj).length} bytes>: must be integer`,
    );
  });

  it('is not quoted by a name rule either', () => {
    const names = policy('n', {
      validate: [{ name: 'n', path: '$.data.v', nameRule: 'dns1123Label' }],
    });
    const messages = causesOf(evaluate([names], request({ v: 'X'.repeat(5000) })).status).map(
      (c) => c.message,
    );
    expect(messages.length).toBeGreaterThan(0);
    for (const m of messages) expect(m).toMatch(/^Invalid value: <value omitted: 5000 bytes>: /);
  });
});

describe('boundCauses', () => {
  const cause = (i: number, pad = 0) => ({
    field: `data.k${i}`,
    message: `Invalid value: "${'x'.repeat(pad)}": bad`,
  });

  it('keeps causes that fit as they are, duplicates too', () => {
    const few = [cause(1), cause(1), cause(2)];
    expect(boundCauses(few)).toEqual(few);
  });

  it(`lists at most ${MAX_CAUSES} distinct causes, then how many more`, () => {
    const many = Array.from({ length: 250 }, (_, i) => cause(i));
    const out = boundCauses([...many, ...many]);
    expect(out.slice(0, MAX_CAUSES)).toEqual(many.slice(0, MAX_CAUSES));
    expect(out.slice(MAX_CAUSES)).toEqual([
      { reason: 'FieldValueTooMany', field: '', message: 'and 150 more causes not shown' },
    ]);
  });

  it(`stops at ${MAX_CAUSES_BYTES} bytes of text`, () => {
    const wide = Array.from({ length: 60 }, (_, i) => cause(i, 1000));
    const out = boundCauses(wide);
    const text = out.slice(0, -1).map((c) => `${c.field}: ${c.message}`);
    expect(Buffer.byteLength(`[${text.join(', ')}]`)).toBeLessThanOrEqual(MAX_CAUSES_BYTES);
    expect(out.length).toBe(31);
    expect(out.at(-1)?.message).toBe('and 30 more causes not shown');
  });
});

describe('boundWarnings (the API server recorder: 4096 runes, then 256 each)', () => {
  it('passes warnings within the total, duplicates dropped', () => {
    expect(boundWarnings(['a', 'b', 'a', ''])).toEqual(['a', 'b']);
  });

  it('over the total, cuts each to 256 runes and stops adding once the total is reached', () => {
    const w = (c: string) => c.repeat(1000);
    const out = boundWarnings(['a', 'b', 'c', 'd', 'e', 'f'].map(w).concat(['🙂'.repeat(300)]));
    // a..e take it over 4096: all replayed cut (1280 runes); f is added (1536); so is 🙂.
    expect(out).toEqual([
      ...['a', 'b', 'c', 'd', 'e', 'f'].map((c) => c.repeat(WARNING_ITEM_RUNES)),
      '🙂'.repeat(WARNING_ITEM_RUNES),
    ]);
    const many = Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(1000, '.'));
    expect(boundWarnings(many).length).toBe(WARNINGS_TOTAL_RUNES / WARNING_ITEM_RUNES);
  });
});
