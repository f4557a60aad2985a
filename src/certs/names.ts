// Input checks for the names that end up in certificate SANs. Kubernetes Service and
// Namespace names are RFC 1123 labels; a bad one would give a certificate no API server
// can ever match, so it is refused before any key is generated. UserError: the CLI prints
// it as one line naming the flag or setting.
import { isIP } from 'node:net';
import { UserError } from '../errors.js';

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
// DNS SANs: lower-case RFC 1123 subdomains, optionally with a leading wildcard label.
const SUBDOMAIN = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Throws a UserError naming `flag` unless `value` is an RFC 1123 label (≤ 63 chars). */
export function assertDnsLabel(value: string, flag: string): void {
  if (value.length > 63 || !LABEL.test(value)) {
    throw new UserError(
      `${flag} must be an RFC 1123 label (lower-case letters, digits and '-', starting and ` +
        `ending with a letter or digit, at most 63 characters), got "${value}"`,
    );
  }
}

/** Throws a UserError naming `flag` unless `value` is a lower-case DNS name (wildcard allowed). */
export function assertDnsName(value: string, flag: string): void {
  const labelsOk = value.split('.').every((l) => l.length <= 63);
  if (value.length > 253 || !labelsOk || !SUBDOMAIN.test(value)) {
    throw new UserError(`${flag} must be a lower-case DNS name (RFC 1123 subdomain), got "${value}"`);
  }
}

/** Throws a UserError naming `flag` unless `value` is an IPv4 or IPv6 address. */
export function assertIp(value: string, flag: string): void {
  if (isIP(value) === 0) {
    throw new UserError(`${flag} must be an IPv4 or IPv6 address, got "${value}"`);
  }
}

/**
 * The names a client may dial for a Service. The API server uses `<svc>.<ns>.svc` as the
 * TLS ServerName for both APIServices and webhooks; the others cover in-cluster callers.
 */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
  ];
}

/** Sorted, de-duplicated copy: SAN lists compare as sets. */
export function normalizeNames(names: readonly string[]): string[] {
  return [...new Set(names)].sort();
}
