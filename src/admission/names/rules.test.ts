import { describe, expect, it } from 'vitest';
import { maskTrailingDash, validateName } from './rules.js';

// Exact texts from admission.md §2.3 (Kubernetes ≥ 1.20; label keys/values per 1.35+).
const SUBDOMAIN =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035 =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const NAME_PART =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const a = (n: number) => 'a'.repeat(n);

describe('dns1123-subdomain', () => {
  it.each(['a', '0', 'example.com', 'a-b.c-d', `${a(63)}.${a(63)}.${a(63)}.${a(61)}`])(
    'accepts %s',
    (name) => expect(validateName('dns1123-subdomain', name)).toEqual([]),
  );
  it.each(['', 'Reglages_1', '-a', 'a-', '.a', 'a.', 'a..b', 'A', 'a_b', 'café', 'a b', 'a.-b'])(
    'rejects %j with the regex message',
    (name) => {
      expect(validateName('dns1123-subdomain', name)).toEqual([SUBDOMAIN]);
    },
  );
  it('253 bytes is the limit; 254 gives the length message only', () => {
    expect(validateName('dns1123-subdomain', a(253))).toEqual([]);
    expect(validateName('dns1123-subdomain', a(254))).toEqual([
      'must be no more than 253 characters',
    ]);
  });
  it('reports length and regex together, length first', () => {
    expect(validateName('dns1123-subdomain', `${a(254)}_`)).toEqual([
      'must be no more than 253 characters',
      SUBDOMAIN,
    ]);
  });
  it('counts bytes, not characters', () => {
    // 127 two-byte characters = 254 bytes.
    expect(validateName('dns1123-subdomain', 'é'.repeat(127))).toEqual([
      'must be no more than 253 characters',
      SUBDOMAIN,
    ]);
  });
});

describe('dns1123-label', () => {
  it('accepts 63 characters and digits first', () => {
    expect(validateName('dns1123-label', a(63))).toEqual([]);
    expect(validateName('dns1123-label', '123-abc')).toEqual([]);
  });
  it('rejects 64 characters', () => {
    expect(validateName('dns1123-label', a(64))).toEqual(['must be no more than 63 characters']);
  });
  it('says only "must not contain dots" for a valid subdomain', () => {
    expect(validateName('dns1123-label', 'web.front')).toEqual(['must not contain dots']);
  });
  it('gives the label regex message otherwise', () => {
    for (const name of ['', 'Web', 'web_front', '-web', 'web-', 'wéb', 'web.']) {
      expect(validateName('dns1123-label', name)).toEqual([LABEL]);
    }
  });
  it('combines length and dots', () => {
    expect(validateName('dns1123-label', `${a(40)}.${a(40)}`)).toEqual([
      'must be no more than 63 characters',
      'must not contain dots',
    ]);
  });
});

describe('dns1035-label', () => {
  it('accepts names starting with a letter', () => {
    expect(validateName('dns1035-label', 'abc-123')).toEqual([]);
    expect(validateName('dns1035-label', a(63))).toEqual([]);
  });
  it.each(['123-abc', '1', '', 'a.b', 'A', 'a-', '-a', 'a_b'])('rejects %j', (name) => {
    expect(validateName('dns1035-label', name)).toEqual([DNS1035]);
  });
  it('rejects 64 characters', () => {
    expect(validateName('dns1035-label', a(64))).toEqual(['must be no more than 63 characters']);
  });
});

describe('generateName (prefix)', () => {
  it('masks a trailing dash by replacing the last two bytes with "a"', () => {
    expect(maskTrailingDash('abc-')).toBe('aba');
    expect(maskTrailingDash('-')).toBe('-');
    expect(maskTrailingDash('abc')).toBe('abc');
  });
  it('accepts a usual generateName', () => {
    expect(validateName('dns1123-subdomain', 'web-', { prefix: true })).toEqual([]);
    expect(validateName('dns1123-label', 'web-', { prefix: true })).toEqual([]);
    expect(validateName('dns1035-label', 'web-', { prefix: true })).toEqual([]);
  });
  it('without prefix the same value is invalid', () => {
    expect(validateName('dns1123-subdomain', 'web-')).toEqual([SUBDOMAIN]);
  });
  it('a lone dash is not masked', () => {
    expect(validateName('dns1123-subdomain', '-', { prefix: true })).toEqual([SUBDOMAIN]);
  });
  it('drops two bytes, so "a.-" masks to "a" and "x_-" becomes valid "xa"', () => {
    expect(validateName('dns1123-label', 'a.-', { prefix: true })).toEqual([]);
    expect(validateName('dns1123-label', 'x_-', { prefix: true })).toEqual([]);
  });
  it('cuts a multi-byte character in half, which stays invalid', () => {
    expect(validateName('dns1123-label', 'abé-', { prefix: true })).toEqual([LABEL]);
  });
  it('length is checked on the masked value (one byte shorter)', () => {
    expect(validateName('dns1123-label', `${a(63)}-`, { prefix: true })).toEqual([]);
    expect(validateName('dns1123-label', `${a(64)}-`, { prefix: true })).toEqual([
      'must be no more than 63 characters',
    ]);
  });
  it('uppercase generateName is still rejected', () => {
    expect(validateName('dns1123-subdomain', 'Web-', { prefix: true })).toEqual([SUBDOMAIN]);
  });
});

describe('path-segment', () => {
  it('accepts almost anything', () => {
    expect(validateName('path-segment', 'invalid++')).toEqual([]);
    expect(validateName('path-segment', 'system:controller:x')).toEqual([]);
    expect(validateName('path-segment', '...')).toEqual([]);
  });
  it('rejects . and ..', () => {
    expect(validateName('path-segment', '.')).toEqual(["may not be '.'"]);
    expect(validateName('path-segment', '..')).toEqual(["may not be '..'"]);
  });
  it('rejects / and %, both reported', () => {
    expect(validateName('path-segment', 'a/b%c')).toEqual([
      "may not contain '/'",
      "may not contain '%'",
    ]);
  });
  it('a prefix may be "." but still not contain "/"', () => {
    expect(validateName('path-segment', '.', { prefix: true })).toEqual([]);
    expect(validateName('path-segment', 'a/', { prefix: true })).toEqual(["may not contain '/'"]);
  });
});

describe('label-key and qualified-name', () => {
  it('accepts keys with and without prefix', () => {
    for (const key of ['app', 'app.kubernetes.io/name', 'My_Key.1', 'example.com/MyName']) {
      expect(validateName('label-key', key)).toEqual([]);
      expect(validateName('qualified-name', key)).toEqual([]);
    }
  });
  it('rejects an empty name part with both messages', () => {
    expect(validateName('label-key', 'example.com/')).toEqual([
      'name part must be non-empty',
      NAME_PART,
    ]);
    expect(validateName('label-key', '')).toEqual(['name part must be non-empty', NAME_PART]);
  });
  it('rejects an empty prefix', () => {
    expect(validateName('label-key', '/name')).toEqual(['prefix part must be non-empty']);
  });
  it('prefixes subdomain errors with "prefix part "', () => {
    expect(validateName('label-key', 'Example.com/name')).toEqual([`prefix part ${SUBDOMAIN}`]);
  });
  it('label keys count bytes (1.35+), qualified names characters', () => {
    expect(validateName('label-key', a(64))).toEqual(['name part must be no more than 63 bytes']);
    expect(validateName('qualified-name', a(64))).toEqual([
      'name part must be no more than 63 characters',
    ]);
    expect(validateName('label-key', a(63))).toEqual([]);
  });
  it('rejects a bad name part', () => {
    expect(validateName('label-key', '-app')).toEqual([NAME_PART]);
    expect(validateName('label-key', 'app!')).toEqual([NAME_PART]);
  });
  it('has a dedicated message for more than one slash', () => {
    const tail =
      "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
    expect(validateName('label-key', 'a/b/c')).toEqual([`a valid label key ${tail}`]);
    expect(validateName('qualified-name', 'a/b/c')).toEqual([`a qualified name ${tail}`]);
  });
});

describe('label-value', () => {
  it('accepts empty, 63 bytes and the examples', () => {
    for (const v of ['', a(63), 'MyValue', 'my_value', '12345', 'a.b-c_d']) {
      expect(validateName('label-value', v)).toEqual([]);
    }
  });
  it('rejects 64 bytes with the 1.35+ "bytes" wording', () => {
    expect(validateName('label-value', a(64))).toEqual(['must be no more than 63 bytes']);
  });
  it.each(['bad value!', '-a', 'a-', '_a', 'ü'])('rejects %j', (v) => {
    expect(validateName('label-value', v)).toEqual([LABEL_VALUE]);
  });
});
