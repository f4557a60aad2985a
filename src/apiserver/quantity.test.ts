import { describe, it, expect } from 'vitest';
import {
  canonicalQuantity,
  formatBinarySI,
  formatCpu,
  formatDecimalSI,
  formatMemory,
  parseBytes,
  parseNanocores,
  parseQuantity,
} from './quantity.js';

describe('formatCpu (DecimalSI, scale -9)', () => {
  // The test vectors of kubelet-metrics.md §2.6.
  it.each([
    [3242827, '3242827n'],
    [250000000, '250m'],
    [1000000000, '1'],
    [2500000000, '2500m'],
    [1500000, '1500u'],
    [5000, '5u'],
    [0, '0'],
    [249957861, '249957861n'],
  ])('%d nanocores → %s', (n, s) => {
    expect(formatCpu(n)).toBe(s);
  });

  it('keeps bigint precision above 2^53', () => {
    expect(formatCpu(12345678901234567891n)).toBe('12345678901234567891n');
    expect(formatCpu(12_000_000_000_000_000_000n)).toBe('12G');
  });
});

describe('formatDecimalSI', () => {
  it('rounds the exponent down to a multiple of 3, as Go’s signed % does', () => {
    expect(formatDecimalSI(5n, -4)).toBe('500u'); // e=-4 → ×100
    expect(formatDecimalSI(5n, -5)).toBe('50u'); // e=-5 → ×10
    expect(formatDecimalSI(5n, 1)).toBe('50');
    expect(formatDecimalSI(5n, 2)).toBe('500');
    expect(formatDecimalSI(5n, 4)).toBe('50k');
    expect(formatDecimalSI(1n, 21)).toBe('1e21');
  });
});

describe('formatMemory (BinarySI)', () => {
  it.each([
    [12533760, '12240Ki'],
    [1616273408, '1578392Ki'],
    [3221225472, '3Gi'],
    [1048576, '1Mi'],
    [12533761, '12533761'],
    [1000, '1k'],
    [600, '600'],
    [0, '0'],
    [2853494784, '2786616Ki'],
  ])('%d B → %s', (n, s) => {
    expect(formatMemory(n)).toBe(s);
  });

  it('stops at Ei', () => {
    expect(formatBinarySI(1024n ** 7n)).toBe('1024Ei');
  });
});

describe('parsing', () => {
  it('parses every suffix and exponent form to base units', () => {
    expect(parseQuantity('250m')).toBeCloseTo(0.25);
    expect(parseQuantity('249957861n')).toBeCloseTo(0.249957861);
    expect(parseQuantity('1500u')).toBeCloseTo(0.0015);
    expect(parseQuantity('2786616Ki')).toBe(2786616 * 1024);
    expect(parseQuantity('3Gi')).toBe(3 * 2 ** 30);
    expect(parseQuantity('1k')).toBe(1000);
    expect(parseQuantity('1.5')).toBe(1.5);
    expect(parseQuantity('12e3')).toBe(12000);
    expect(() => parseQuantity('12 Ki')).toThrow(/invalid "12 Ki"/);
    expect(() => parseQuantity('abc')).toThrow();
  });

  it('round-trips exact values', () => {
    for (const n of [0n, 5000n, 250000000n, 249957861n, 2500000000n]) {
      expect(parseNanocores(formatCpu(n))).toBe(n);
    }
    for (const b of [0n, 600n, 1000n, 12533761n, 2853494784n, 3221225472n]) {
      expect(parseBytes(formatMemory(b))).toBe(b);
    }
    expect(parseNanocores('2')).toBe(2_000_000_000n);
    expect(parseBytes('1M')).toBe(1_000_000n);
  });
});

describe('canonicalQuantity', () => {
  it.each([
    ['0.5', '500m'],
    ['1000m', '1'],
    ['1.5', '1500m'],
    ['0.0001', '1m'],
    ['100m', '100m'],
    ['1024Mi', '1Gi'],
    ['1536Mi', '1536Mi'],
    ['512', '512'],
    ['1000k', '1M'],
    ['128974848', '128974848'],
    ['129e6', '129e6'],
    ['1e3', '1e3'],
    ['0', '0'],
    ['1Ki', '1Ki'],
  ])('%s → %s', (input, out) => expect(canonicalQuantity(input)).toBe(out));
  it('leaves unparsable text alone', () => expect(canonicalQuantity('lots')).toBe('lots'));
  it('keeps the value past E with an exponent, where Go would drop the suffix', () => {
    expect(canonicalQuantity('1000E')).toBe('1e21');
    expect(canonicalQuantity('1000e18')).toBe('1e21');
  });
});

describe('kubectl top cells', () => {
  it('cpu: milli rounded up; memory: Mi truncated', async () => {
    const { topCpu, topMemory } = await import('./quantity.js');
    expect(topCpu(1977465164n)).toBe('1978m');
    expect(topCpu(1_000_000n)).toBe('1m');
    expect(topCpu(1n)).toBe('1m');
    expect(topCpu(0n)).toBe('0m');
    expect(topMemory(1332896n * 1024n)).toBe('1301Mi');
    expect(topMemory(1_048_575n)).toBe('0Mi');
  });
});
