import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../errors.js';
import { loadPolicies } from './load.js';

const dir = mkdtempSync(join(tmpdir(), 'annex-load-'));
const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('loadPolicies', () => {
  it('names the file and the fault of a policy that does not compile', () => {
    const bad = write(
      'bad.yaml',
      'apiVersion: policy.annex.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata: {name: b}\nspec:\n  match: {kinds: [Pod]}\n  validate: [{name: r, path: "$.x[", required: true}]\n',
    );
    expect(() => loadPolicies([bad])).toThrow(UserError);
    expect(() => loadPolicies([bad])).toThrow(
      `${bad}: AdmissionPolicy "b": rule "r": path "$.x[": "[" at character 4 is not closed`,
    );
    expect(() => loadPolicies([join(dir, 'none.yaml')])).toThrow('no such file or directory');
    mkdirSync(join(dir, 'empty'), { recursive: true });
    expect(() => loadPolicies([join(dir, 'empty')])).toThrow('no .yaml, .yml or .json file');
  });
});
