import type { ChildProcess } from 'node:child_process';

/**
 * Stops processes last-started first (a component before what it depends on): SIGTERM, then
 * SIGKILL after `graceMs` for one that does not exit, waiting for each to be gone.
 */
export async function stopInReverse(procs: readonly ChildProcess[], graceMs = 5000): Promise<void> {
  for (const c of [...procs].reverse()) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), graceMs);
    await gone;
    clearTimeout(timer);
  }
}
