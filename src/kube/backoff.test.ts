import { expect, it } from 'vitest';
import { ItemBackoff } from './backoff.js';

it('doubles per item from the first delay to the cap, and starts again once forgotten', () => {
  const b = new ItemBackoff<string>(500, 4000);
  expect([b.fail('a'), b.fail('a'), b.fail('a'), b.fail('a'), b.fail('a')]).toEqual([
    500, 1000, 2000, 4000, 4000,
  ]);
  expect(b.fail('b')).toBe(500);
  b.forget('a');
  expect(b.fail('a')).toBe(500);
  for (let i = 0; i < 100; i++) b.fail('c');
  expect(b.fail('c')).toBe(4000);
});
