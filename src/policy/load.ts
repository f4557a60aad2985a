// Reading AdmissionPolicies from files and folders and compiling them: the offline loader
// `annex check`, `annex defaults` and the policy feature's `policy.directory` share.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readObjects } from '../admission/defaults/input.js';
import { UserError } from '../errors.js';
import { compilePolicy, type CompiledPolicy } from './compile.js';
import { compileException, ExceptionError, type CompiledException } from './exceptions/match.js';
import { EXCEPTION_KIND } from './exceptions/types.js';
import { PolicyCompileError } from './types.js';

const MANIFEST = /\.(ya?ml|json)$/;

/** Whether a path named on the command line is a folder; a UserError when it is not there. */
export function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    throw new UserError(`${p}: no such file or directory`);
  }
}

/** Files named on the command line; a folder contributes its .yaml, .yml and .json files (not recursive, as kubectl -f). */
export function expandPaths(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    if (p === '-') {
      out.push(p);
      continue;
    }
    if (!isDirectory(p)) {
      out.push(p);
      continue;
    }
    const files = readdirSync(p)
      .filter((f) => MANIFEST.test(f))
      .sort();
    if (files.length === 0) throw new UserError(`${p}: no .yaml, .yml or .json file in the folder`);
    out.push(...files.map((f) => join(p, f)));
  }
  return out;
}

export const label = (file: string) => (file === '-' ? 'stdin' : file);

/** Every AdmissionPolicy in the files and folders, compiled; a bad one is a UserError naming its file. */
export function loadPolicies(paths: readonly string[]): CompiledPolicy[] {
  return loadPolicyFiles(paths).policies;
}

/** Every PolicyException in the files and folders (see loadPolicyFiles). */
export function loadExceptions(
  paths: readonly string[],
  namespace = 'default',
): CompiledException[] {
  return loadPolicyFiles(paths, namespace).exceptions;
}

/**
 * The AdmissionPolicies and PolicyExceptions of the files and folders, each file read once
 * (stdin can be read only once), compiled; an exception without a namespace is in
 * `namespace` (kubectl's -n). A bad one is a UserError naming its file.
 */
export function loadPolicyFiles(
  paths: readonly string[],
  namespace = 'default',
): { policies: CompiledPolicy[]; exceptions: CompiledException[] } {
  const policies: CompiledPolicy[] = [];
  const exceptions: CompiledException[] = [];
  for (const file of expandPaths(paths)) {
    for (const obj of readObjects(file, label(file))) {
      try {
        if (obj.kind === EXCEPTION_KIND) exceptions.push(compileException(obj, namespace));
        else policies.push(compilePolicy(obj));
      } catch (e) {
        if (e instanceof PolicyCompileError || e instanceof ExceptionError)
          throw new UserError(`${label(file)}: ${e.message}`);
        throw e;
      }
    }
  }
  return { policies, exceptions };
}
