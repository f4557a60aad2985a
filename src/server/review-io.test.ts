import { describe, expect, it } from 'vitest';
import { OverrunError, within, type Budget } from './review-io.js';

describe('within: the budget a review handler runs in', () => {
  it("gives synchronous work the deadline on performance.now()'s clock, and arms no timer", async () => {
    const before = performance.now();
    let seen: Budget | undefined;
    const out = await within(2000, (b) => {
      seen = b;
      return 'done';
    });
    const after = performance.now();
    expect(out).toBe('done');
    expect(seen!.deadline).toBeGreaterThanOrEqual(before + 2000);
    expect(seen!.deadline).toBeLessThanOrEqual(after + 2000);
    // Answered as it returned: nothing was left to abort it later.
    expect(seen!.signal.aborted).toBe(false);
  });

  it('aborts the signal when the budget ends, at the deadline it announced, and rejects with OverrunError', async () => {
    let seen: Budget | undefined;
    const aborted = new Promise<number>((resolve) => {
      void within(30, (b) => {
        seen = b;
        b.signal.addEventListener('abort', () => resolve(performance.now()));
        return new Promise(() => {});
      }).catch(() => {});
    });
    const at = await aborted;
    expect(at).toBeGreaterThanOrEqual(seen!.deadline - 1); // timers may fire a hair early
    await expect(within(20, () => new Promise(() => {}))).rejects.toBeInstanceOf(OverrunError);
  });

  it('leaves the signal alone when asynchronous work finishes in time', async () => {
    let seen: Budget | undefined;
    const out = await within(5000, async (b) => {
      seen = b;
      await new Promise((r) => setTimeout(r, 5));
      return 42;
    });
    expect(out).toBe(42);
    expect(seen!.signal.aborted).toBe(false);
  });
});
