import { describe, expect, it } from 'vitest';
import { StatusError } from '../../core/status.js';
import type { KubeObject } from '../../core/types.js';
import { fieldMatcher, parseFieldSelector } from './field.js';

const pod: KubeObject = {
  metadata: { name: 'web-1', namespace: 'shop' },
  spec: { nodeName: 'node-a', replicas: 3 },
};

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    expect((e as StatusError).code).toBe(400);
    return (e as StatusError).message;
  }
  throw new Error('no error');
}

describe('fieldSelector', () => {
  it.each([
    ['', true],
    ['metadata.name=web-1', true],
    ['metadata.name==web-1', true],
    ['metadata.name!=web-1', false],
    ['metadata.namespace=shop,metadata.name=web-1', true],
    ['metadata.namespace=shop,metadata.name=web-2', false],
    ['spec.nodeName=node-a', true],
    ['spec.replicas=3', true],
    ['spec.replicas!=3', false],
  ])('%j matches: %j', (sel, want) => {
    const m = fieldMatcher(parseFieldSelector(sel), {
      'spec.nodeName': '.spec.nodeName',
      'spec.replicas': '$.spec.replicas',
    });
    expect(m(pod)).toBe(want);
  });

  it('unescapes values and splits on unescaped commas only', () => {
    const s = parseFieldSelector('metadata.name=a\\,b\\=c\\\\d');
    expect(s.requirements).toEqual([{ field: 'metadata.name', operator: '=', value: 'a,b=c\\d' }]);
    expect(s.requiresExactMatch('metadata.name')).toBe('a,b=c\\d');
  });

  it('rejects unknown fields with kube-apiserver message', () => {
    expect(message(() => fieldMatcher(parseFieldSelector('spec.nodeName=x')))).toBe(
      'field label not supported: spec.nodeName',
    );
  });

  it.each([
    ['metadata.name', "invalid selector: 'metadata.name'; can't understand 'metadata.name'"],
    ['a=b,c', "invalid selector: 'a=b,c'; can't understand 'c'"],
    ['a=b\\x', 'invalid field selector: invalid escape sequence: \\x'],
    ['a=b\\', 'invalid field selector: invalid escape sequence: \\'],
    ['a==b=c', 'invalid field selector: unescaped character in value: ='],
  ])('rejects %j', (sel, want) => {
    expect(message(() => parseFieldSelector(sel))).toBe(want);
  });
});
