import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { parseGoFloat, parsePrometheusText, ParseError } from './prometheus-text.js';

const fixture = readFileSync(
  new URL('./fixtures/kubelet-resource-metrics.txt', import.meta.url),
  'utf8',
);

describe('parsePrometheusText', () => {
  it('reads every sample of the kubelet fixture with labels, values and timestamps', () => {
    const samples = parsePrometheusText(fixture);
    expect(samples).toHaveLength(22);
    const nginx = samples.find(
      (s) => s.name === 'container_cpu_usage_seconds_total' && s.labels.container === 'nginx',
    );
    expect(nginx).toEqual({
      name: 'container_cpu_usage_seconds_total',
      labels: { container: 'nginx', namespace: 'default', pod: 'web-6f9c7d5b8d-k2x7p' },
      value: 413.371829441,
      timestampMs: 1767225612230,
    });
    const start = samples.find((s) => s.name === 'container_start_time_seconds');
    expect(start?.timestampMs).toBeUndefined();
    expect(start?.value).toBe(1.76713919506921e9);
    expect(samples.find((s) => s.name === 'resource_scrape_error')?.value).toBe(0);
  });

  it('keeps only wanted names', () => {
    const samples = parsePrometheusText(fixture, new Set(['node_memory_working_set_bytes']));
    expect(samples).toEqual([
      {
        name: 'node_memory_working_set_bytes',
        labels: {},
        value: 2853494784,
        timestampMs: 1767225613617,
      },
    ]);
  });

  it('unescapes label values and accepts blanks, trailing commas and comments', () => {
    const [s] = parsePrometheusText('# a comment\n\nm{ a = "x\\"y\\\\z\\nw" , b="",} +Inf\n');
    expect(s?.labels).toEqual({ a: 'x"y\\z\nw', b: '' });
    expect(s?.value).toBe(Infinity);
  });

  it.each([
    ['m{a="1"', /unterminated|quoted|after label/],
    ['m{a="\\t"} 1', /invalid escape/],
    ['m{a="1",a="2"} 1', /duplicate label a/],
    ['m{1a="1"} 1', /invalid label name/],
    ['m 1 2 3', /expected a value/],
    ['m abc', /invalid value/],
    ['m 1 -62135596800000', /invalid timestamp/],
    ['m 1 1.5', /invalid timestamp/],
    ['m', /expected a space/],
    ['m{a="1"}1', /expected a space/],
    ['1m 1', /expected a metric name/],
    ['# TYPE m countr', /invalid TYPE/],
    ['# HELP 9x text', /invalid metric name/],
  ])('rejects %j', (line, message) => {
    expect(() => parsePrometheusText(`ok 1\n${line}\n`)).toThrow(ParseError);
    expect(() => parsePrometheusText(`ok 1\n${line}\n`)).toThrow(message);
    expect(() => parsePrometheusText(`ok 1\n${line}\n`)).toThrow(/^line 2:/);
  });

  it.each(['m s3cr3t-value', 'm 1 s3cr3t-value', 'm{a="s3cr3t-value"}1'])(
    'never quotes the offending text of %j (the message is logged)',
    (line) => {
      expect(() => parsePrometheusText(line)).toThrow(ParseError);
      expect(() => parsePrometheusText(line)).not.toThrow(/s3cr3t/);
    },
  );

  it('fails the whole body on an error in a family it was not asked for', () => {
    expect(() => parsePrometheusText('wanted 1\nother{ 1\n', new Set(['wanted']))).toThrow();
  });
});

describe('parseGoFloat', () => {
  it.each([
    ['1.253376e+07', 12533760],
    ['357.35491', 357.35491],
    ['-6.7953645788713455e+09', -6.7953645788713455e9],
    ['.5', 0.5],
    ['5.', 5],
    ['-Inf', -Infinity],
    ['+inf', Infinity],
  ])('%s', (text, value) => {
    expect(parseGoFloat(text)).toBe(value);
  });
  it('NaN and junk', () => {
    expect(parseGoFloat('NaN')).toBeNaN();
    expect(parseGoFloat('0x10')).toBeUndefined();
    expect(parseGoFloat('')).toBeUndefined();
    expect(parseGoFloat('1e')).toBeUndefined();
  });
});
