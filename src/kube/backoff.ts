// Per-item exponential backoff, as client-go's ItemExponentialFailureRateLimiter: each
// failure of an item doubles its next delay from `firstMs` up to `maxMs`; a success forgets it.
export class ItemBackoff<K> {
  private readonly failures = new Map<K, number>();
  constructor(
    private readonly firstMs = 500,
    private readonly maxMs = 30_000,
  ) {}

  /** Records one more failure of `key`; returns how long to wait before trying it again. */
  fail(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return Math.min(this.maxMs, this.firstMs * 2 ** Math.min(n, 30));
  }

  forget(key: K): void {
    this.failures.delete(key);
  }
}
