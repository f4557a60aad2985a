import { describe, expect, it } from 'vitest';
import { goQuote, joinQuote, sortedSet } from './text.js';

describe('PodSecurity wording helpers', () => {
  it("quotes as Go's %q does", () => {
    expect(goQuote('unconfined')).toBe('"unconfined"');
    expect(goQuote('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(goQuote('tab\there\n')).toBe('"tab\\there\\n"');
    expect(goQuote('\x01\x7f')).toBe('"\\x01\\x7f"');
    expect(goQuote('é✓')).toBe('"é✓"');
    expect(goQuote('\u200b')).toBe('"\\u200b"');
  });
  it('joins names in quotes without escaping', () => {
    expect(joinQuote([])).toBe('');
    expect(joinQuote(['a', 'b'])).toBe('"a", "b"');
  });
  it('sorts distinct values in byte order, numbers as strings', () => {
    expect(sortedSet(['80', '10000', '80', 'b', 'B'])).toEqual(['10000', '80', 'B', 'b']);
  });
});
