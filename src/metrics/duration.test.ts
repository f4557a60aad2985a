import { describe, it, expect } from 'vitest';
import { formatGoDuration, formatKubeTime } from './duration.js';

describe('formatGoDuration', () => {
  it.each([
    [0n, '0s'],
    [15_013_000_000n, '15.013s'],
    [15_000_000_000n, '15s'],
    [10_000_000_000n, '10s'],
    [60_500_000_000n, '1m0.5s'],
    [3_600_000_000_000n, '1h0m0s'],
    [3_723_000_000_001n, '1h2m3.000000001s'],
    [1_500_000n, '1.5ms'],
    [2_000n, '2µs'],
    [999n, '999ns'],
    [-1_500_000_000n, '-1.5s'],
  ])('%s ns → %s', (ns, s) => {
    expect(formatGoDuration(ns)).toBe(s);
  });
});

describe('formatKubeTime', () => {
  it('truncates to whole seconds', () => {
    expect(formatKubeTime(1767225613617n * 1_000_000n)).toBe('2026-01-01T00:00:13Z');
    expect(formatKubeTime(1767225599999n * 1_000_000n)).toBe('2025-12-31T23:59:59Z');
  });
});
