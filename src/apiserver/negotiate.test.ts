import { describe, expect, it } from 'vitest';
import { StatusError } from '../core/status.js';
import { contentTypeOf, DISCOVERY_CONVERSIONS, negotiate, TABLE_CONVERSIONS } from './negotiate.js';

describe('negotiate', () => {
  it.each([
    undefined,
    '',
    '*/*',
    'application/json',
    'application/*',
    'application/vnd.kubernetes.protobuf, */*',
    'application/json;stream=watch',
  ])('gives plain JSON for %j', (accept) => {
    expect(negotiate(accept, TABLE_CONVERSIONS)).toBeUndefined();
  });

  it("picks kubectl's Table choice and falls back to JSON when Tables are not offered", () => {
    const kubectl =
      'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
    expect(negotiate(kubectl, TABLE_CONVERSIONS)).toEqual({
      kind: 'Table',
      group: 'meta.k8s.io',
      version: 'v1',
    });
    expect(
      negotiate('application/json;as=Table;v=v1beta1;g=meta.k8s.io', TABLE_CONVERSIONS)?.version,
    ).toBe('v1beta1');
    expect(negotiate(kubectl, [])).toBeUndefined();
  });

  it('honours q values', () => {
    expect(
      negotiate(
        'application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io',
        TABLE_CONVERSIONS,
      )?.kind,
    ).toBe('Table');
    expect(
      negotiate(
        'application/json;as=Table;v=v1;g=meta.k8s.io;q=0,application/json',
        TABLE_CONVERSIONS,
      ),
    ).toBeUndefined();
  });

  it('answers 406 when nothing listed can be produced', () => {
    for (const accept of [
      'application/yaml',
      'application/vnd.kubernetes.protobuf',
      'application/json;as=Table;v=v2;g=meta.k8s.io',
      'application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList',
    ]) {
      try {
        negotiate(accept, TABLE_CONVERSIONS);
        expect.unreachable(accept);
      } catch (e) {
        expect(e).toBeInstanceOf(StatusError);
        expect((e as StatusError).status).toMatchObject({
          code: 406,
          reason: 'NotAcceptable',
          message: 'only the following media types are accepted: application/json',
        });
      }
    }
  });

  it('negotiates aggregated discovery as the aggregator asks for it', () => {
    const aggregator130 =
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
    const v2 = negotiate(aggregator130, DISCOVERY_CONVERSIONS);
    expect(contentTypeOf(v2)).toBe(
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    );
    const beta = negotiate(
      'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
      DISCOVERY_CONVERSIONS,
    );
    expect(beta?.version).toBe('v2beta1');
    expect(contentTypeOf(TABLE_CONVERSIONS[0])).toBe(
      'application/json;as=Table;v=v1;g=meta.k8s.io',
    );
  });
});
