// Go's time formatting for the two metrics.k8s.io time fields: `window` is a metav1.Duration
// (Go Duration.String(): "15.013s", "1m0.5s", "1.5ms") and `timestamp` a metav1.Time
// (RFC 3339, second precision), so clients that compare strings see what metrics-server sends.

const NS_PER_US = 1_000n;
const NS_PER_MS = 1_000_000n;
const NS_PER_S = 1_000_000_000n;

/** "<int>.<frac>" with the fraction's trailing zeros (and a bare dot) removed. */
function fixed(whole: bigint, frac: bigint, digits: number): string {
  const f = frac.toString().padStart(digits, '0').replace(/0+$/, '');
  return f ? `${whole}.${f}` : `${whole}`;
}

/** Go Duration.String() of a duration in nanoseconds. */
export function formatGoDuration(ns: bigint): string {
  if (ns === 0n) return '0s';
  const sign = ns < 0n ? '-' : '';
  const u = ns < 0n ? -ns : ns;
  if (u < NS_PER_US) return `${sign}${u}ns`;
  if (u < NS_PER_MS) return `${sign}${fixed(u / NS_PER_US, u % NS_PER_US, 3)}µs`;
  if (u < NS_PER_S) return `${sign}${fixed(u / NS_PER_MS, u % NS_PER_MS, 6)}ms`;
  const totalSeconds = u / NS_PER_S;
  const seconds = fixed(totalSeconds % 60n, u % NS_PER_S, 9);
  const totalMinutes = totalSeconds / 60n;
  if (totalMinutes === 0n) return `${sign}${seconds}s`;
  const hours = totalMinutes / 60n;
  const minutes = totalMinutes % 60n;
  return hours === 0n ? `${sign}${minutes}m${seconds}s` : `${sign}${hours}h${minutes}m${seconds}s`;
}

/** metav1.Time JSON: RFC 3339 in UTC, fractional seconds cut off (not rounded). */
export function formatKubeTime(ns: bigint): string {
  const seconds = ns / NS_PER_S - (ns < 0n && ns % NS_PER_S !== 0n ? 1n : 0n);
  return new Date(Number(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
