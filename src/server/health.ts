// /livez, /readyz and /healthz answer like kube-apiserver's: "ok" as text, no auth, so
// kubelet probes and the aggregator's checks never depend on the API server being up.
// /readyz is the conjunction of every feature's readiness; `?verbose` lists each check,
// and /readyz/<check> asks one, as the API server's healthz handlers do. A passing check
// may carry a note (`[+]name ok: note`): k8s.io/apiserver prints `[+]name ok`,
// `[+]name excluded: ok` and `[-]name failed: reason`; a line that keeps the `[+]name ok`
// prefix reads as passing to anything that parses those, and the note follows `: ` as a
// failure's reason does.
import type Koa from 'koa';
import { asApiRequest, classifiedOf, probeOf } from './request-kind.js';

/** Named checks: true when passing (with an optional note), else the reason (shown by ?verbose). */
export type Readiness = () => [name: string, result: true | string, note?: string][];

/**
 * Answers the probes step 3 (request-kind.ts) classified (or, alone, those it sees).
 * A check that does not exist goes on as an API request: a 404 like any unknown path.
 */
export function health(readiness: Readiness): Koa.Middleware {
  return async (ctx, next) => {
    const state = classifiedOf(ctx);
    const probe = state.kind ? state.probe : probeOf(ctx.method, ctx.path);
    if (!probe) return next();
    const { root, check: one } = probe;
    let checks: ReturnType<Readiness> = [['ping', true], ...(root === 'readyz' ? readiness() : [])];
    if (one !== undefined) {
      checks = checks.filter(([name]) => name === one);
      if (checks.length === 0) {
        if (state.kind) asApiRequest(ctx);
        return next();
      }
    }
    const failed = checks.filter(([, r]) => r !== true);
    ctx.type = 'text/plain; charset=utf-8';
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.status = failed.length ? 503 : 200;
    const verbose = failed.length > 0 || 'verbose' in ctx.query;
    if (!verbose) {
      ctx.body = 'ok';
      return;
    }
    const lines = checks.map(([name, r, note]) =>
      r !== true ? `[-]${name} failed: ${r}` : note ? `[+]${name} ok: ${note}` : `[+]${name} ok`,
    );
    ctx.body = `${lines.join('\n')}\n${root} check ${failed.length ? 'failed' : 'passed'}\n`;
  };
}
