// What `import … from 'annex'` gives a user. That the built-in features take nothing
// else (but for the exceptions listed with their reasons) is test/unit/layering.test.ts.
import { describe, expect, it } from 'vitest';
import * as annex from './index.js';

describe('the public API', () => {
  it('exports the contract, the declarations, the answers and the server', () => {
    for (const n of [
      'defineFeature',
      'serve',
      'validatingWebhook',
      'mutatingWebhook',
      'allow',
      'denyInvalid',
      'mutate',
      'resource',
      'ObjectStore',
      'mirror',
      'StatusError',
      // What Provider.subscribe is documented to throw for a version too old to replay.
      'expired',
      'gone',
    ]) {
      expect(typeof (annex as Record<string, unknown>)[n], n).toBe('function');
    }
  });
});
