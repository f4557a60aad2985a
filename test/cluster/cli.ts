// The built CLI as a user runs it: a child process with a clean $KUBECONFIG (so the
// developer's own cluster never leaks in), its exit code, output and duration.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

export const cli = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`npm run build\` first`);
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cli, ...args],
      { timeout: 60_000, env: { ...process.env, KUBECONFIG: '', ...env } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr, ms: Date.now() - started });
      },
    );
  });
}

/** A user error: exit 1, exactly one stderr line starting "annex: ", no stack trace. */
export function expectOneLineError(r: CliResult): string {
  expect(r.stderr).not.toMatch(/\n\s+at /);
  expect(r.code).toBe(1);
  const lines = r.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^annex: /);
  return lines[0]!;
}
