import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { decodeResourceMetrics } from './decode.js';
import { ParseError } from './prometheus-text.js';

const fixtureB = readFileSync(
  new URL('./fixtures/kubelet-resource-metrics.txt', import.meta.url),
  'utf8',
);

describe('decodeResourceMetrics', () => {
  it('turns the reference body into truncated integer points', () => {
    const d = decodeResourceMetrics(fixtureB, 0);
    // ⌊8435.28001347 × 1e9⌋ in float64 is ...469, not ...470 (kubelet-metrics.md §2.8).
    expect(d.node).toEqual({
      startNs: 0n,
      tsNs: 1767225613617_000_000n,
      cpuNs: 8435280013469n,
      memory: 2853494784,
    });
    expect(d.pods.map((p) => `${p.namespace}/${p.name}`).sort()).toEqual([
      'default/web-6f9c7d5b8d-k2x7p',
      'kube-system/coredns-76f75df574-9qz5m',
    ]);
    const web = d.pods.find((p) => p.name === 'web-6f9c7d5b8d-k2x7p');
    expect([...(web?.containers.keys() ?? [])].sort()).toEqual(['log-shipper', 'nginx']);
    expect(web?.containers.get('nginx')).toEqual({
      startNs: BigInt(Math.trunc(1.767204003418533e9 * 1e9)),
      tsNs: 1767225612230_000_000n,
      cpuNs: BigInt(Math.trunc(413.371829441 * 1e9)),
      memory: 41852928,
    });
    expect(d.incompletePods).toEqual([]);
  });

  it('stamps untimed samples with the request start and ignores pod_* families', () => {
    const d = decodeResourceMetrics(
      'node_cpu_usage_seconds_total 357.35491\nnode_memory_working_set_bytes 1000\npod_cpu_usage_seconds_total{namespace="a",pod="b"} 5\n',
      1633253809720,
    );
    expect(d.node).toEqual({
      startNs: 0n,
      tsNs: 1633253809720_000_000n,
      cpuNs: 357354910000n,
      memory: 1000,
    });
    expect(d.pods).toEqual([]);
  });

  it('drops an incomplete node and a pod whose container lacks CPU', () => {
    const d = decodeResourceMetrics(
      [
        'resource_scrape_error 0',
        'node_memory_working_set_bytes 1000 5',
        'container_start_time_seconds{container="c",namespace="n",pod="p"} 1',
        'container_memory_working_set_bytes{container="c",namespace="n",pod="p"} 100 5',
        'container_cpu_usage_seconds_total{container="c",namespace="n",pod="q"} 1 5',
        'container_memory_working_set_bytes{container="c",namespace="n",pod="q"} 100 5',
      ].join('\n'),
      0,
    );
    expect(d.node).toBeUndefined();
    expect(d.incompletePods).toEqual(['n/p']);
    expect(d.pods.map((p) => p.name)).toEqual(['q']);
  });

  it('an error-only body yields no node point', () => {
    expect(
      decodeResourceMetrics('resource_scrape_error 1\nscrape_error 1\n', 1).node,
    ).toBeUndefined();
  });

  it('fails the node on a pre-1.29 zero start time line', () => {
    expect(() =>
      decodeResourceMetrics(
        'container_start_time_seconds{container="c",namespace="n",pod="p"} -6.7953645788713455e+09 -62135596800000\n',
        0,
      ),
    ).toThrow(ParseError);
  });

  it('keeps the node when a start time overflows in nanoseconds (fuzz seed)', () => {
    // Was a RangeError from BigInt(-Infinity): the whole node failed to scrape.
    const d = decodeResourceMetrics(
      [
        'node_cpu_usage_seconds_total 12.5 1767225616991',
        'node_memory_working_set_bytes 1e9 1767225616991',
        'container_cpu_usage_seconds_total{container="c",namespace="ns",pod="p"} 1 1767225616991',
        'container_memory_working_set_bytes{container="c",namespace="ns",pod="p"} 1 1767225616991',
        'container_start_time_seconds{container="c",namespace="ns",pod="p"} -1.5e308',
      ].join('\n'),
      0,
    );
    expect(d.node).toBeDefined();
    expect(d.pods[0]?.containers.get('c')?.startNs).toBe(0n);
  });
});
