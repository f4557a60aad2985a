// admission.clientCA: the CA of the client certificate the kube-apiserver presents to
// annex's webhooks (its AdmissionConfiguration's kubeconfig). As shipped the file comes
// from an optional ConfigMap, so it may be absent at start and appear, change or vanish
// later (kubelet rewrites the volume): it is read again every few seconds, and the
// listener's CertificateRequest follows it (a Go client sends its certificate only when
// its issuer is among the CAs named there).
import type { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parsePemBundle } from '../apiserver/auth/x509.js';
import { UserError } from '../errors.js';
import type { Logger } from '../log.js';

export interface AdmissionClientCa {
  /** The CA certificates callers are checked against; empty while there are none. */
  certs(): X509Certificate[];
  /** Why there is no CA to check against, or undefined when there is. */
  problem(): string | undefined;
  /** Calls `cb` whenever the certificates change; returns an unsubscribe. */
  onChange(cb: () => void): () => void;
  stop(): void;
}

type Read = { certs: X509Certificate[]; text: string } | { error: string; missing: boolean };

function read(file: string): Read {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code ?? err.message;
    return { error: `admission.clientCA: cannot read ${file}: ${why}`, missing: true };
  }
  try {
    const certs = parsePemBundle(text);
    if (certs.length) return { certs, text };
    return { error: `admission.clientCA: ${file} holds no PEM certificate`, missing: false };
  } catch (e) {
    return { error: `admission.clientCA: ${file}: ${(e as Error).message}`, missing: false };
  }
}

/**
 * Reads admission.clientCA now and every `pollMs`. `required` (admission.requireClientCert):
 * a file that cannot be used at start is a UserError, since every review would be refused.
 * Otherwise a missing file only means no caller is authenticated until it appears; an
 * unusable one at start is still a UserError (a mistake, not an absence), and one that
 * turns bad later keeps the previous certificates, logged once.
 */
export function admissionClientCa(
  file: string,
  opts: { required: boolean; log: Logger; pollMs?: number },
): AdmissionClientCa {
  const listeners = new Set<() => void>();
  if (!file) {
    if (opts.required)
      throw new UserError('admission.requireClientCert needs admission.clientCA (a PEM file)');
    const none: X509Certificate[] = [];
    return {
      certs: () => none,
      problem: () => 'admission.clientCA is not set',
      onChange: () => () => {},
      stop: () => {},
    };
  }
  const state = read(file);
  if ('error' in state && (opts.required || !state.missing)) throw new UserError(state.error);
  if ('error' in state)
    opts.log.warn(
      { file, error: state.error },
      'admission.clientCA not found: no review is authenticated until it appears',
    );
  let certs = 'certs' in state ? state.certs : [];
  let text = 'certs' in state ? state.text : '';
  let problem = 'error' in state ? state.error : undefined;
  let reported = problem;

  const poll = setInterval(() => {
    const next = read(file);
    if ('certs' in next) {
      problem = reported = undefined;
      if (next.text === text) return;
      [certs, text] = [next.certs, next.text];
      opts.log.info({ file, certificates: certs.length }, 'admission.clientCA loaded');
    } else {
      if (next.error === reported) return;
      reported = next.error;
      if (!next.missing && certs.length) {
        // A bad write (or one caught half-way): keep what was trusted.
        opts.log.error(
          { file, error: next.error },
          'admission.clientCA unusable; keeping the previous one',
        );
        return;
      }
      opts.log.warn(
        { file, error: next.error },
        'admission.clientCA unusable: no review is authenticated',
      );
      problem = next.error;
      if (!certs.length) return;
      [certs, text] = [[], ''];
    }
    for (const cb of listeners) cb();
  }, opts.pollMs ?? 2000);
  poll.unref();

  return {
    certs: () => certs,
    problem: () => problem,
    onChange(cb) {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    stop: () => clearInterval(poll),
  };
}
