// Client-certificate checks done by hand, because the TLS listener only *requests* a
// certificate (requestCert, rejectUnauthorized: false) and trusts two CAs for different
// things: the front-proxy CA vouches for X-Remote-* headers, the client CA for a user.
// socket.authorized cannot say which one signed; this module can.
import { X509Certificate } from 'node:crypto';
import type { TLSSocket, DetailedPeerCertificate } from 'node:tls';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_EKU = '2.5.29.37.0';
const MAX_DEPTH = 8;

/** Every certificate of a PEM bundle (the configmap keys hold bundles during rotation). */
export function parsePemBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

/** The chain the client presented, leaf first; empty when it sent no certificate. */
export function peerChain(socket: TLSSocket): X509Certificate[] {
  let cert: DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  const chain: X509Certificate[] = [];
  const seen = new Set<string>();
  while (cert?.raw && !seen.has(cert.fingerprint256) && chain.length <= MAX_DEPTH) {
    seen.add(cert.fingerprint256);
    chain.push(new X509Certificate(cert.raw));
    cert = cert.issuerCertificate; // the last one points to itself
  }
  return chain;
}

export type ChainResult =
  { ok: true; commonName: string; organizations: string[] } | { ok: false; error: string };

function validAt(c: X509Certificate, now: number): boolean {
  return Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);
}

/** No EKU extension means any usage (Go's rule); otherwise it must allow clientAuth. */
function allowsClientAuth(c: X509Certificate): boolean {
  const eku = c.keyUsage as string[] | undefined;
  return !eku || eku.length === 0 || eku.includes(CLIENT_AUTH) || eku.includes(ANY_EKU);
}

const issuedBy = (child: X509Certificate, parent: X509Certificate) =>
  child.checkIssued(parent) && child.verify(parent.publicKey);

/**
 * Verifies `chain[0]` up to one of `roots`, through the other presented certificates as
 * intermediates, checking dates and the clientAuth usage on the way (Go's x509.Verify
 * with ExtKeyUsageClientAuth). The errors read like Go's, since operators search them.
 */
export function verifyClientChain(
  chain: X509Certificate[],
  roots: X509Certificate[],
  now = Date.now(),
): ChainResult {
  const [leaf, ...presented] = chain;
  if (!leaf) return { ok: false, error: 'no client certificate' };
  if (roots.length === 0) return { ok: false, error: 'x509: no trusted CA configured' };
  let current = leaf;
  const used = new Set([leaf.fingerprint256]);
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    if (!validAt(current, now)) {
      return { ok: false, error: 'x509: certificate has expired or is not yet valid' };
    }
    if (!allowsClientAuth(current)) {
      return { ok: false, error: 'x509: certificate specifies an incompatible key usage' };
    }
    const root = roots.find((r) => issuedBy(current, r));
    if (root) {
      if (!validAt(root, now)) {
        return { ok: false, error: 'x509: certificate has expired or is not yet valid' };
      }
      return { ok: true, ...subjectOf(leaf) };
    }
    const next = presented.find((p) => !used.has(p.fingerprint256) && p.ca && issuedBy(current, p));
    if (!next) return { ok: false, error: 'x509: certificate signed by unknown authority' };
    used.add(next.fingerprint256);
    current = next;
  }
  return { ok: false, error: 'x509: too many intermediates' };
}

/** RFC 2253 escapes as Node prints them: `\,` and friends, and `\XX` for control bytes. */
function unescapeDn(v: string): string {
  return v.replace(/\\([0-9A-Fa-f]{2}|.)/g, (_, e: string) =>
    e.length === 2 ? String.fromCharCode(parseInt(e, 16)) : e,
  );
}

/** CN and every O of the subject: the user name and groups of a client-CA certificate. */
export function subjectOf(c: X509Certificate): { commonName: string; organizations: string[] } {
  let commonName = '';
  const organizations: string[] = [];
  for (const line of c.subject.split('\n')) {
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq);
    const value = unescapeDn(line.slice(eq + 1));
    if (key === 'CN') commonName = value;
    else if (key === 'O') organizations.push(value);
  }
  return { commonName, organizations };
}
