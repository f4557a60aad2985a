import { describe, expect, it } from 'vitest';
import { StatusError } from '../../core/status.js';
import { parseLabelSelector } from './label.js';

function errorOf(sel: string): { code: number; reason: string; message: string } {
  try {
    parseLabelSelector(sel);
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    const s = (e as StatusError).status;
    return { code: s.code, reason: s.reason, message: s.message };
  }
  throw new Error(`selector ${sel} parsed`);
}

describe('parseLabelSelector', () => {
  const labels = { app: 'web', tier: 'front', n: '7' };

  it.each([
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app!=web', false],
    ['app!=db', true],
    ['missing!=x', true],
    ['app in (web,db)', true],
    ['app in (db)', false],
    ['app notin (db)', true],
    ['missing notin (db)', true],
    ['app', true],
    ['missing', false],
    ['!missing', true],
    ['!app', false],
    ['app=web,tier=front', true],
    ['app=web,tier=back', false],
    ['n>5', true],
    ['n<5', false],
    ['app>5', false],
    ['  app  in  ( web , db )  ', true],
    ['x in (in,notin)', false],
  ])('%j matches %j', (sel, want) => {
    expect(parseLabelSelector(sel).matches(labels)).toBe(want);
  });

  it('treats missing labels as an empty set', () => {
    expect(parseLabelSelector('!a').matches(undefined)).toBe(true);
    expect(parseLabelSelector('a').matches(undefined)).toBe(false);
  });

  it('sorts requirements by key and values, and reports exact matches', () => {
    const s = parseLabelSelector('z=1,a in (c,b,b)');
    expect(s.requirements.map((r) => r.key)).toEqual(['a', 'z']);
    expect(s.requirements[0]!.values).toEqual(['b', 'c']);
    expect(s.requiresExactMatch('z')).toBe('1');
    expect(s.requiresExactMatch('a')).toBeUndefined();
  });

  it('accepts empty values in sets and after =', () => {
    expect(parseLabelSelector('a in (,x)').requirements[0]!.values).toEqual(['', 'x']);
    expect(parseLabelSelector('a=').matches({ a: '' })).toBe(true);
    expect(parseLabelSelector('a in ()').requirements[0]!.values).toEqual(['']);
  });

  it.each([
    ['a b', "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"],
    ['a in b', "unable to parse requirement: found 'b' expected: '('"],
    ['a in (b', "unable to parse requirement: found '', expected: ',' or ')'"],
    ['a=b,', "found '', expected: identifier after ','"],
    ['a=b c', "found 'c', expected: ',' or 'end of string'"],
    ['=a', "found '=', expected: !, identifier, or 'end of string'"],
    ['!a=b', "found '=', expected: ',' or 'end of string'"],
    ['a=(', "unable to parse requirement: found '(', expected: identifier"],
    [
      'a>x',
      `unable to parse requirement: values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer`,
    ],
  ])('rejects %j', (sel, message) => {
    expect(errorOf(sel)).toEqual({ code: 400, reason: 'BadRequest', message });
  });

  it('validates keys and values with apimachinery wording', () => {
    expect(errorOf('-a=b').message).toBe(
      `unable to parse requirement: <nil>: Invalid value: "-a": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
    );
    expect(errorOf('Bad_Prefix/a=b').message).toContain(
      'prefix part a lowercase RFC 1123 subdomain',
    );
    expect(errorOf('a=b$').message).toBe(
      `unable to parse requirement: values[0][a]: Invalid value: "b$": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
    );
    expect(
      parseLabelSelector('example.com/app=v1.2_x').matches({ 'example.com/app': 'v1.2_x' }),
    ).toBe(true);
    expect(errorOf(`a=${'x'.repeat(64)}`).message).toContain('must be no more than 63 characters');
  });
});
