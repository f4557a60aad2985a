import { describe, expect, it } from 'vitest';
import { fieldErrorBody, fieldErrorMessage, goQuote } from './field.js';
import { validateName } from './rules.js';

describe('fieldErrorMessage', () => {
  it('renders the seed chapter ConfigMap error byte for byte', () => {
    const [detail] = validateName('dns1123-subdomain', 'Reglages_1');
    expect(fieldErrorMessage('metadata.name', 'Reglages_1', detail ?? '')).toBe(
      `metadata.name: Invalid value: "Reglages_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    );
  });
  it('prints numbers and booleans plain, objects as JSON', () => {
    expect(fieldErrorMessage('spec.replicas', -1, 'must be >= 0')).toBe(
      'spec.replicas: Invalid value: -1: must be >= 0',
    );
    expect(fieldErrorMessage('x', true, 'd')).toBe('x: Invalid value: true: d');
    expect(fieldErrorMessage('x', { a: 1 }, 'd')).toBe('x: Invalid value: {"a":1}: d');
  });
  it('omits the value for Required and Too long', () => {
    expect(fieldErrorBody('Required value', '', 'name or generateName is required')).toBe(
      'Required value: name or generateName is required',
    );
    expect(fieldErrorBody('Too long', 'x', 'may not be more than 262144 bytes')).toBe(
      'Too long: may not be more than 262144 bytes',
    );
  });
});

describe('goQuote (Go %q)', () => {
  it('matches JSON for plain names', () => {
    expect(goQuote('web.front')).toBe('"web.front"');
    expect(goQuote('a"b\\c')).toBe('"a\\"b\\\\c"');
  });
  it('keeps printable unicode, escapes controls the Go way', () => {
    expect(goQuote('café')).toBe('"café"');
    expect(goQuote('a\tb\x01\x7f')).toBe('"a\\tb\\x01\\x7f"');
    expect(goQuote('a\u00a0b')).toBe('"a\\u00a0b"');
    expect(goQuote('\u{e0001}')).toBe('"\\U000e0001"');
  });
});
