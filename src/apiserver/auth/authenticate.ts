// Who is calling, decided as k8s.io/apiserver's delegating authenticator does: the front
// proxy's certificate (then its X-Remote-* headers), else a client-CA certificate, else a
// bearer token via TokenReview, else 401. Identity headers are deleted in every case, so
// nothing downstream can read a forged X-Remote-User.
import type { Http2ServerRequest } from 'node:http2';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type Koa from 'koa';
import type { Logger } from '../../log.js';
import { unauthorized } from '../../core/status.js';
import type { AuthenticationConfig } from './authentication-config.js';
import { identityFromHeaders, stripIdentityHeaders } from './request-header.js';
import type { TokenReviewer } from './token-review.js';
import { ALWAYS_ALLOW_PATHS, ANONYMOUS, AUTHENTICATED_GROUP, type UserInfo } from './types.js';
import { peerChain, verifyClientChain, type ChainResult } from './x509.js';

export interface AuthenticateOptions {
  config: { current(): AuthenticationConfig };
  tokens: Pick<TokenReviewer, 'review'>;
  log: Logger;
  /** Paths served to callers without credentials (as system:anonymous). */
  alwaysAllowPaths?: readonly string[];
  /** How long a connection's certificate verdict is reused (dates are re-checked after). */
  certVerdictTtlMs?: number;
  now?: () => number;
}

/** The TLS socket under an HTTP/1.1 request or an HTTP/2 stream (compat API). */
export function tlsSocketOf(req: IncomingMessage | Http2ServerRequest): TLSSocket | undefined {
  const session = (req as Http2ServerRequest).stream?.session;
  const s = (session?.socket ?? req.socket) as Partial<TLSSocket> | undefined;
  return typeof s?.getPeerCertificate === 'function' ? (s as TLSSocket) : undefined;
}

interface Verdict {
  config: AuthenticationConfig;
  at: number;
  presented: boolean;
  front?: ChainResult & { allowedName?: boolean };
  client?: ChainResult;
}

function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const [scheme, token] = header.trim().split(/\s+/, 2);
  return scheme?.toLowerCase() === 'bearer' && token ? token : undefined;
}

export function authenticate(opts: AuthenticateOptions): Koa.Middleware {
  const now = opts.now ?? Date.now;
  const ttl = opts.certVerdictTtlMs ?? 60_000;
  const allowPaths = new Set(opts.alwaysAllowPaths ?? ALWAYS_ALLOW_PATHS);
  // One verdict per connection: an HTTP/2 session from the aggregator carries many requests.
  const verdicts = new WeakMap<TLSSocket, Verdict>();

  function verdictFor(socket: TLSSocket | undefined, config: AuthenticationConfig): Verdict {
    const t = now();
    const cached = socket && verdicts.get(socket);
    if (cached && cached.config === config && t - cached.at < ttl) return cached;
    const chain = socket ? peerChain(socket) : [];
    const v: Verdict = { config, at: t, presented: chain.length > 0 };
    if (chain.length > 0) {
      const rh = config.requestHeader;
      if (rh) {
        const r = verifyClientChain(chain, rh.ca.certs, t);
        v.front =
          r.ok && rh.allowedNames.length > 0 && !rh.allowedNames.includes(r.commonName)
            ? {
                ok: false,
                error: `x509: subject with cn=${r.commonName} is not in the allowed list`,
              }
            : r;
      }
      if (config.clientCA) v.client = verifyClientChain(chain, config.clientCA.certs, t);
    }
    if (socket) verdicts.set(socket, v);
    return v;
  }

  return async (ctx, next) => {
    const config = opts.config.current();
    const rawHeaders = ctx.req.rawHeaders;
    const v = verdictFor(tlsSocketOf(ctx.req), config);
    let user: UserInfo | undefined;
    let how = '';

    if (v.front?.ok && config.requestHeader) {
      user = identityFromHeaders(rawHeaders, config.requestHeader);
      how = 'front-proxy';
    }
    stripIdentityHeaders(ctx.req.headers, config.requestHeader);

    if (!user && v.client?.ok) {
      if (!v.client.commonName) {
        opts.log.warn({ path: ctx.path }, 'client certificate without a common name');
      } else {
        user = { name: v.client.commonName, groups: [...v.client.organizations], extra: {} };
        how = 'x509';
      }
    }

    if (!user) {
      const token = bearerToken(ctx.get('authorization'));
      if (token) {
        try {
          user = (await opts.tokens.review(token)) ?? undefined;
          how = 'token';
        } catch (e) {
          opts.log.warn({ path: ctx.path, error: (e as Error).message }, 'TokenReview failed');
        }
        if (user) delete ctx.req.headers.authorization;
      }
    }

    if (!user) {
      if (allowPaths.has(ctx.path)) {
        ctx.state.user = { ...ANONYMOUS, groups: [...ANONYMOUS.groups], extra: {} };
        return next();
      }
      if (v.presented && !v.front?.ok && !v.client?.ok) {
        // The classic misconfiguration (wrong front-proxy CA, EKU, CN): say why, once per request.
        const why =
          v.front && !v.front.ok
            ? v.front.error
            : v.client && !v.client.ok
              ? v.client.error
              : 'no trusted CA';
        opts.log.warn({ path: ctx.path, error: why }, 'Unable to authenticate the request');
      }
      throw unauthorized();
    }
    if (!user.groups.includes(AUTHENTICATED_GROUP)) {
      user = { ...user, groups: [...user.groups, AUTHENTICATED_GROUP] };
    }
    ctx.state.user = user;
    ctx.state.authenticatedBy = how;
    await next();
  };
}
