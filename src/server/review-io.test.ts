import { describe, expect, it } from 'vitest';
import { budgetMs, deadlineOf, OverrunError, within } from './review-io.js';

describe('within: the budget of one review', () => {
  it('ends the budget `budget` ms after the review arrived, not after it was read', async () => {
    const arrived = performance.now() - 400; // reading and parsing it took 400 ms
    expect(await within(1000, (signal) => deadlineOf(signal), arrived)).toBe(arrived + 1000);
    const now = performance.now();
    expect(await within(1000, (signal) => deadlineOf(signal)! - now)).toBeGreaterThanOrEqual(1000);
  });

  it('an overrun is reported with the budget, and its signal aborted', async () => {
    let signal: AbortSignal | undefined;
    const spent = within(
      750,
      (s) => {
        signal = s;
        return new Promise(() => {});
      },
      performance.now() - 750,
    );
    await expect(spent).rejects.toEqual(new OverrunError(750));
    expect(signal?.aborted).toBe(true);
  });

  it('reads ?timeout= as the API server writes it, less a margin', () => {
    expect(budgetMs('10s')).toBe(9750);
    expect(budgetMs('1s')).toBe(750);
    expect(budgetMs(undefined, 5000)).toBe(4750);
    expect(budgetMs('0s')).toBe(50);
  });
});
