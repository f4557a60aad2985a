// Fuzz: the text parsers that take what a client or a kubelet sends: labelSelector and
// fieldSelector (aggregated API lists and watches), the `continue` token (paging) and the
// Prometheus text format (kubelet scraping, external metrics). Each input is a valid seed
// mutated or a string of the grammar's fragments; each parser returns a value or throws
// its documented error (a 400 StatusError, a ParseError), what it returns can be used
// without a crash, and afterwards a valid input parses exactly as before.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeContinue, encodeContinue } from '../../../src/apiserver/paging.js';
import { fieldMatcher, parseFieldSelector } from '../../../src/apiserver/selectors/field.js';
import { parseLabelSelector } from '../../../src/apiserver/selectors/label.js';
import { StatusError } from '../../../src/core/status.js';
import { decodeResourceMetrics } from '../../../src/metrics/decode.js';
import { ParseError } from '../../../src/metrics/prometheus-text.js';
import {
  expectUnpolluted,
  guard,
  options,
  returnsOrRefuses,
  runsOf,
  SEED,
  textInputs,
  timeoutFor,
} from './fuzz.js';
import { readFileSync } from 'node:fs';

const RUNS = runsOf(10_000);

/** A parser refused the input as the caller expects: a 400 Status, the message its own. */
class BadRequest extends StatusError {
  static override [Symbol.hasInstance](e: unknown) {
    return e instanceof StatusError && e.code === 400;
  }
}

interface Surface<T> {
  name: string;
  seeds: string[];
  fragments: string[];
  parse(input: string): T;
  documented: abstract new (...args: any[]) => Error;
  /** The inputs, when not the seeds mutated and the fragments strung together. */
  inputs?: fc.Arbitrary<string>;
  /** Uses what the parser returned, as its caller would. */
  use?(parsed: T): void;
}

const LABELS = [
  {},
  { app: 'web', tier: 'front' },
  { 'example.com/app': 'a', env: 'prod', n: '7' },
  JSON.parse('{"__proto__": "x", "constructor": "y", "n": "12"}'),
];
const OBJECT = {
  apiVersion: 'v1',
  kind: 'Thing',
  metadata: { name: 'web', namespace: 'ns' },
  spec: { nodeName: 'n1' },
};

const base64url = (s: string) => Buffer.from(s).toString('base64url');
const CONTINUE_SEEDS = [
  '{"v":"meta.k8s.io/v1","rv":94137,"start":"/ns/carton-3"}',
  '{"v":"meta.k8s.io/v1","rv":-1,"start":"/a\\u0000"}',
  '{"v":"meta.k8s.io/v1","rv":5,"start":"/x","__proto__":{"polluted":1}}',
];
const CONTINUE_FRAGMENTS = [
  '"rv":',
  '"start":',
  '"v":',
  '"/../"',
  '"/.."',
  '1e400',
  '-2',
  '0',
  '9007199254740993',
  'null',
  '[]',
  '{}',
  '"__proto__":{"polluted":1}',
  ',',
  ':',
];

/** Well-formed JSON, each field right or of the wrong value or type. */
const continueFields = fc.record(
  {
    v: fc.oneof(fc.constant('meta.k8s.io/v1'), fc.string(), fc.integer()),
    rv: fc.oneof(fc.integer({ min: -3 }), fc.double(), fc.string(), fc.constant(null)),
    start: fc.oneof(
      fc.string().map((s) => `/${s}`),
      fc.constantFrom('/', '/..', '/../x', '/a/../b', 'x', ''),
      fc.integer(),
    ),
  },
  { requiredKeys: [] },
);

const surfaces: Surface<any>[] = [
  {
    name: 'labelSelector',
    seeds: [
      'app=web',
      'env in (prod, staging),tier notin (front)',
      '!canary,app',
      'a!=b,c==d',
      'n>5,n<10',
      'example.com/app in (),x',
      'k8s.io/name=v-1_2.3',
    ],
    fragments: [
      'app',
      'example.com/',
      'n',
      '=',
      '==',
      '!=',
      ' in ',
      ' notin ',
      '(',
      ')',
      ',',
      '!',
      '>',
      '<',
      ' ',
      '5',
      '-7',
      'v',
    ],
    parse: parseLabelSelector,
    documented: BadRequest,
    use(s: ReturnType<typeof parseLabelSelector>) {
      for (const l of LABELS) expect(typeof s.matches(l)).toBe('boolean');
      s.requiresExactMatch('app');
    },
  },
  {
    name: 'fieldSelector',
    seeds: [
      'metadata.name=web',
      'metadata.namespace!=kube-system,spec.nodeName==n1',
      'metadata.name=a\\,b\\=c\\\\',
    ],
    fragments: [
      'metadata.name',
      'metadata.namespace',
      'spec.nodeName',
      'status.phase',
      '=',
      '==',
      '!=',
      ',',
      '\\',
      '\\,',
      'web',
    ],
    parse: parseFieldSelector,
    documented: BadRequest,
    use(s: ReturnType<typeof parseFieldSelector>) {
      s.requiresExactMatch('metadata.name');
      let matches: ReturnType<typeof fieldMatcher>;
      try {
        matches = fieldMatcher(s, { 'spec.nodeName': '.spec.nodeName' });
      } catch (e) {
        if (e instanceof BadRequest) return; // a field the resource does not declare
        throw e;
      }
      expect(typeof matches(OBJECT)).toBe('boolean');
    },
  },
  {
    name: 'continue token',
    seeds: [
      encodeContinue(94137, 'ns/carton-3'),
      encodeContinue(-1, 'a'),
      encodeContinue(1, 'ns/\u0000\u{1d11e}'),
      Buffer.from('{"v":"meta.k8s.io/v1","rv":5,"start":"/x","__proto__":{"polluted":1}}').toString(
        'base64url',
      ),
    ],
    fragments: [
      'eyJ2Ijoi',
      'bWV0YS5rOHMuaW8vdjEi',
      'LCJydiI6',
      'fQ',
      '=',
      '==',
      '-',
      '_',
      'A',
      '/',
      '+',
    ],
    // Mostly tokens whose JSON is mutated before encoding: base64 flips rarely decode.
    inputs: fc.oneof(
      {
        weight: 1,
        arbitrary: textInputs(CONTINUE_SEEDS.map(base64url), [
          'eyJ2Ijoi',
          'fQ',
          '=',
          '-',
          '_',
          '+',
          '/',
        ]),
      },
      { weight: 3, arbitrary: textInputs(CONTINUE_SEEDS, CONTINUE_FRAGMENTS).map(base64url) },
      { weight: 2, arbitrary: continueFields.map((o) => base64url(JSON.stringify(o))) },
    ),
    parse: decodeContinue,
    documented: BadRequest,
    use(t: ReturnType<typeof decodeContinue>) {
      expect(Number.isInteger(t.rv)).toBe(true);
      expect(typeof t.start).toBe('string');
    },
  },
  {
    name: 'Prometheus text (kubelet /metrics/resource)',
    seeds: [
      readFileSync('src/metrics/fixtures/kubelet-resource-metrics.txt', 'utf8'),
      [
        '# TYPE node_cpu_usage_seconds_total counter',
        'node_cpu_usage_seconds_total 12.5 1767225616991',
        'node_memory_working_set_bytes 1e9',
        'container_cpu_usage_seconds_total{container="c",namespace="ns",pod="p"} +Inf',
        'container_memory_working_set_bytes{container="c",namespace="ns",pod="p",a="q\\"\\\\\\n"} NaN',
        'container_start_time_seconds{container="c",namespace="ns",pod="p",} -1.5e308',
      ].join('\n'),
    ],
    fragments: [
      'node_cpu_usage_seconds_total',
      'container_start_time_seconds',
      '{',
      '}',
      '="',
      '"',
      ',',
      ' ',
      '# HELP ',
      '# TYPE ',
      'gauge',
      '\n',
      '1e309',
      '-Inf',
      'NaN',
      '99999999999999999999',
      '\\',
    ],
    parse: (body) => decodeResourceMetrics(body, 1767225616991),
    documented: ParseError,
    use(d: ReturnType<typeof decodeResourceMetrics>) {
      for (const p of d.pods)
        for (const c of p.containers.values()) expect(typeof c.cpuNs).toBe('bigint');
    },
  },
];

describe(`fuzz: ${RUNS} inputs per parser (seed ${SEED})`, () => {
  for (const s of surfaces) {
    it(
      `${s.name}: a value or its documented error, nothing else`,
      () => {
        const before = s.seeds.map((x) =>
          JSON.stringify(
            returnsOrRefuses(() => s.parse(x), s.documented, { ok: 0, refused: 0 }),
            bigints,
          ),
        );
        const watch = guard();
        const tally = { ok: 0, refused: 0 };
        fc.assert(
          fc.property(s.inputs ?? textInputs(s.seeds, s.fragments), (input) => {
            const parsed = returnsOrRefuses(() => s.parse(input), s.documented, tally);
            if (parsed !== undefined) s.use?.(parsed);
            expectUnpolluted();
          }),
          options(RUNS),
        );
        watch.check();
        const after = s.seeds.map((x) =>
          JSON.stringify(
            returnsOrRefuses(() => s.parse(x), s.documented, { ok: 0, refused: 0 }),
            bigints,
          ),
        );
        expect(after).toEqual(before);
        console.log(
          `fuzz: ${s.name}: ${RUNS} inputs, ${tally.ok} parsed, ${tally.refused} refused`,
        );
        expect(tally.ok).toBeGreaterThan(0);
        expect(tally.refused).toBeGreaterThan(0);
      },
      timeoutFor(RUNS, 0.2),
    );
  }
});

function bigints(_: string, v: unknown) {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Map) return [...v.entries()];
  return v;
}
