import { Registry, register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { counter, gauge, histogram } from './metric.js';

describe('metrics registered once', () => {
  it('gives back the metric already registered under that name, in the registry given', async () => {
    const registry = new Registry();
    const c = { name: 'annex_test_once_total', help: 'test', labelNames: ['x'] as const };
    const first = counter(c, registry);
    expect(counter(c, registry)).toBe(first);
    first.labels('a').inc();
    expect(await registry.metrics()).toContain('annex_test_once_total{x="a"} 1');
    expect(register.getSingleMetric('annex_test_once_total')).toBeUndefined();
    expect(gauge({ name: 'annex_test_g', help: 'g' }, registry)).toBe(
      gauge({ name: 'annex_test_g', help: 'g' }, registry),
    );
    expect(histogram({ name: 'annex_test_h', help: 'h' }, registry)).toBe(
      histogram({ name: 'annex_test_h', help: 'h' }, registry),
    );
  });

  it('uses the default registry, which /metrics serves, when given none', () => {
    const h = histogram({ name: 'annex_test_default_seconds', help: 'h' });
    expect(register.getSingleMetric('annex_test_default_seconds')).toBe(h);
    register.removeSingleMetric('annex_test_default_seconds');
  });
});
