// Who annex is to the API server, asked for before each request: a bearer token (static,
// from a rotating file, or from an exec plugin) and/or a client certificate from an exec
// plugin. Client certificates named in the kubeconfig itself stay on KubeCredentials.
import type { FileToken } from './token.js';

export interface Credential {
  token?: string;
  cert?: Buffer;
  key?: Buffer;
}

export interface CredentialSource {
  /** What to present now (cached; re-fetched when due). `timeoutMs` bounds any fetch. */
  get(opts: { timeoutMs: number }): Credential | Promise<Credential>;
  /**
   * The server answered 401 to `used`: forget it. True when the next get() may return a
   * different credential, so that one retry is worth it.
   */
  rejected(used: Credential): boolean;
}

export function staticToken(token: string): CredentialSource {
  const cred = { token };
  return { get: () => cred, rejected: () => false };
}

export function tokenFileSource(token: FileToken): CredentialSource {
  return { get: () => ({ token: token() }), rejected: () => token.refresh() };
}
