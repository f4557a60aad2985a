import { describe, expect, it } from 'vitest';
import { budgetMs, OverrunError, within, type Budget } from './review-io.js';

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
    // Timers may fire a hair early (libuv's cached loop time): 1.2 ms on Node 24, a core busy.
    expect(at).toBeGreaterThanOrEqual(seen!.deadline - 2);
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

  it('ends the budget `budget` ms after the review arrived, not after it was read', async () => {
    const arrived = performance.now() - 400; // reading and parsing it took 400 ms
    expect(await within(1000, (b) => b.deadline, arrived)).toBe(arrived + 1000);
    let signal: AbortSignal | undefined;
    const spent = within(
      750,
      (b) => {
        signal = b.signal;
        return new Promise(() => {});
      },
      performance.now() - 750,
    );
    await expect(spent).rejects.toEqual(new OverrunError(750));
    expect(signal?.aborted).toBe(true);
  });
});

describe('budgetMs', () => {
  it('reads ?timeout= as the API server writes it, less a margin', () => {
    expect(budgetMs('10s')).toBe(8000);
    expect(budgetMs('1s')).toBe(750);
    expect(budgetMs(undefined, 5000)).toBe(4000);
    expect(budgetMs('0s')).toBe(50);
  });
});
