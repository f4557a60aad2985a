// How kubectl prints the API server's errors (cmdutil.CheckErr), shared by the commands that
// answer as kubectl would.
import { goQuote } from '../admission/names/index.js';
import type { Status } from '../core/status.js';

/**
 * How kubectl prints a 422 Invalid Status with details (cmdutil.CheckErr): `The <Kind>
 * "<name>" is invalid: <field>: <message>`, or one `* <cause>` line per distinct cause.
 * A webhook's denial prints the same way: the "denied the request" prefix of its message
 * is not shown, because kubectl prints the causes, not the message.
 */
export function kubectlInvalidText(status: Status): string {
  const d = status.details;
  if (!d) return 'The request is invalid';
  const head =
    d.kind || d.name
      ? `The ${d.kind ?? ''} ${goQuote(d.name ?? '')} is invalid`
      : 'The request is invalid';
  const causes = [...new Set((d.causes ?? []).map((c) => `${c.field ?? ''}: ${c.message ?? ''}`))];
  if (causes.length === 0) return head;
  if (causes.length === 1) return `${head}: ${causes[0]}`;
  return `${head}: \n${causes.map((c) => `* ${c}`).join('\n')}`;
}

/**
 * kubectl's stderr for the creates it could not make: a lone Invalid error with details as
 * `The <Kind> "<name>" is invalid: …`; otherwise one `Error from server (<Reason>): error
 * when creating "<file>": <message>` line per error.
 */
export function kubectlCreateErrors(refusals: readonly Status[], source: string): string[] {
  const [only] = refusals;
  if (refusals.length === 1 && only?.reason === 'Invalid' && only.details) {
    return [kubectlInvalidText(only)];
  }
  return refusals.map(
    (s) => `Error from server (${s.reason}): error when creating "${source}": ${s.message}`,
  );
}
