// One CA for every replica (tls.secret): the CA and serving certificate live in a Secret
// that every replica copies into tls.dir (and watches, by polling); one replica at a time
// — the holder of a coordination.k8s.io Lease of the same name — creates, renews or
// rotates it. Rotation never leaves a replica serving a certificate some caBundle does not
// trust:
//   stable     ca.crt = [A]      serving A-signed
//   publishing ca.crt = [A, B]   serving A-signed   every replica publishes [A, B]
//   switched   ca.crt = [A, B]   serving B-signed   every replica reloads the B leaf
//   stable     ca.crt = [B]      serving B-signed   A dropped
// Each step waits `overlapSeconds` after the previous one, longer than a replica takes
// to sync the Secret, reload, and re-apply its registrations. A rotation starts when the
// CA nears expiry or when the Secret is annotated annex.dev/rotate.
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import type { KubeClient } from '../kube/client.js';
import { KubeApiError } from '../kube/errors.js';
import { releaseLease, tryAcquireLease } from '../kube/lease.js';
import type { Logger } from '../log.js';
import { WorkQueue } from '../kube/workqueue.js';
import { ensureDir, FILES, readOptional, writeFileAtomic } from './files.js';
import { createCa, issue, type CertAndKey } from './issue.js';
import { normalizeNames, serviceDnsNames } from './names.js';

export type Phase = 'stable' | 'publishing' | 'switched';
export const PHASE = 'annex.dev/ca-phase';
export const SINCE = 'annex.dev/ca-phase-since';
export const ROTATE = 'annex.dev/rotate';

/** The Secret's data, decoded. */
export interface SharedData {
  /** The trust bundle: what every caBundle holds (one or two CAs). */
  'ca.crt'?: string;
  /** The CA that signed tls.crt, and its key. */
  'signer.crt'?: string;
  'signer.key'?: string;
  'tls.crt'?: string;
  'tls.key'?: string;
  /** The next CA while a rotation publishes it. */
  'next.crt'?: string;
  'next.key'?: string;
}

export interface SharedState {
  data: SharedData;
  phase: Phase;
  since: number;
  rotateRequested: boolean;
}

export type Action = 'create' | 'renew-leaf' | 'publish' | 'switch' | 'drop-old' | 'none';

export interface PlanOptions {
  dnsNames: string[];
  overlapMs: number;
  caRenewBeforeMs: number;
  leafRenewBeforeMs: number;
}

const DAY = 86_400_000;
/** The clientAuth extended key usage. */
const EKU_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/** What the Lease holder does next: a pure function of the Secret and the clock. */
export function plan(s: SharedState, now: number, o: PlanOptions): Action {
  const d = s.data;
  if (!d['ca.crt'] || !d['signer.crt'] || !d['signer.key'] || !d['tls.crt'] || !d['tls.key'])
    return 'create';
  if (s.phase === 'publishing') return now - s.since >= o.overlapMs && d['next.crt'] ? 'switch' : 'none';
  if (s.phase === 'switched') return now - s.since >= o.overlapMs ? 'drop-old' : 'none';
  const signer = new X509Certificate(d['signer.crt']);
  if (s.rotateRequested || Date.parse(signer.validTo) - now < o.caRenewBeforeMs) return 'publish';
  const leaf = new X509Certificate(d['tls.crt']);
  const sans = normalizeNames(
    (leaf.subjectAltName ?? '')
      .split(', ')
      .filter((x) => x.startsWith('DNS:'))
      .map((x) => x.slice(4)),
  );
  if (Date.parse(leaf.validTo) - now < o.leafRenewBeforeMs || sans.join() !== o.dnsNames.join())
    return 'renew-leaf';
  // A leaf issued before it carried clientAuth: the replicas' peer calls are refused with it.
  if (!(leaf.keyUsage ?? []).includes(EKU_CLIENT_AUTH)) return 'renew-leaf';
  return 'none';
}

export interface Issuer {
  ca(): Promise<CertAndKey>;
  leaf(signer: CertAndKey): Promise<CertAndKey>;
}

/** The Secret's next data and phase for an action (none: unchanged). */
export async function act(action: Action, d: SharedData, issuer: Issuer): Promise<{ data: SharedData; phase: Phase }> {
  const signerOf = (crt?: string, key?: string): CertAndKey => ({ certPem: crt!, keyPem: key! });
  switch (action) {
    case 'create': {
      const ca = await issuer.ca();
      const leaf = await issuer.leaf(ca);
      return {
        phase: 'stable',
        data: { 'ca.crt': ca.certPem, 'signer.crt': ca.certPem, 'signer.key': ca.keyPem, 'tls.crt': leaf.certPem, 'tls.key': leaf.keyPem },
      };
    }
    case 'renew-leaf': {
      const leaf = await issuer.leaf(signerOf(d['signer.crt'], d['signer.key']));
      return { phase: 'stable', data: { ...d, 'tls.crt': leaf.certPem, 'tls.key': leaf.keyPem } };
    }
    case 'publish': {
      const next = await issuer.ca();
      return {
        phase: 'publishing',
        data: { ...d, 'ca.crt': `${d['signer.crt']!.trim()}\n${next.certPem.trim()}\n`, 'next.crt': next.certPem, 'next.key': next.keyPem },
      };
    }
    case 'switch': {
      const next = signerOf(d['next.crt'], d['next.key']);
      const leaf = await issuer.leaf(next);
      const rest = { ...d };
      delete rest['next.crt'];
      delete rest['next.key'];
      return {
        phase: 'switched',
        data: { ...rest, 'signer.crt': next.certPem, 'signer.key': next.keyPem, 'tls.crt': leaf.certPem, 'tls.key': leaf.keyPem },
      };
    }
    case 'drop-old':
      return { phase: 'stable', data: { ...d, 'ca.crt': d['signer.crt'] } };
    case 'none':
      return { phase: 'stable', data: d };
  }
}

interface SecretObj {
  metadata: { name: string; namespace?: string; resourceVersion?: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  type?: string;
  data?: Record<string, string>;
}

const decode = (data: Record<string, string> = {}): SharedData =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
const encode = (data: SharedData): Record<string, string> =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v as string).toString('base64')]));

function stateOf(s: SecretObj | undefined): SharedState {
  const a = s?.metadata.annotations ?? {};
  const phase = (['publishing', 'switched'] as const).find((p) => p === a[PHASE]) ?? 'stable';
  return { data: decode(s?.data), phase, since: Date.parse(a[SINCE] ?? '') || 0, rotateRequested: ROTATE in a };
}

export interface SharedOptions {
  kube: KubeClient;
  namespace: string;
  /** The Secret's name, and the Lease's. */
  name: string;
  dir: string;
  identity: string;
  service: string;
  serviceNamespace: string;
  dnsNames: string[];
  ipAddresses: string[];
  syncIntervalMs: number;
  overlapMs: number;
  log: Logger;
  /** The process's work queue; a private one when absent (tests). */
  queue?: WorkQueue;
}

export interface SharedCertificates {
  stop(): void;
}

/**
 * Copies the Secret into `dir` (creating it first if this replica wins the Lease and it
 * is empty), then keeps doing so every syncIntervalMs, advancing a rotation when due.
 * Resolves once `dir` holds a usable key pair.
 */
export async function startSharedCertificates(o: SharedOptions): Promise<SharedCertificates> {
  const path = `/api/v1/namespaces/${o.namespace}/secrets/${o.name}`;
  const dnsNames = normalizeNames([...serviceDnsNames(o.service, o.serviceNamespace), ...o.dnsNames]);
  const planOpts: PlanOptions = { dnsNames, overlapMs: o.overlapMs, caRenewBeforeMs: 90 * DAY, leafRenewBeforeMs: 30 * DAY };
  const issuer: Issuer = {
    ca: () => createCa({ validityDays: 3650 }),
    // clientAuth too, as ensure.ts issues it: replicas present it to each other (peer
    // endpoints, src/server/client-cert.ts); without it a peer refuses the certificate and
    // `kubectl get admissionevents` lists only the replica the aggregator reached.
    leaf: (signer) =>
      issue({
        ca: signer,
        commonName: `${o.service}.${o.serviceNamespace}.svc`,
        usages: ['serverAuth', 'clientAuth'],
        dnsNames,
        ipAddresses: o.ipAddresses,
      }),
  };
  const get = async (): Promise<SecretObj | undefined> => {
    try {
      return await o.kube.get<SecretObj>(path);
    } catch (e) {
      if (e instanceof KubeApiError && e.code === 404) return undefined;
      throw e;
    }
  };

  /** The Lease holder's step: re-read under the Lease, act, write with resourceVersion. */
  async function advance(): Promise<void> {
    if (!(await tryAcquireLease(o.kube, o.namespace, o.name, o.identity, 15))) return;
    try {
      const cur = await get();
      const state = stateOf(cur);
      const action = plan(state, Date.now(), planOpts);
      if (action === 'none') return;
      const next = await act(action, state.data, issuer);
      const annotations: Record<string, string> = { ...cur?.metadata.annotations, [PHASE]: next.phase, [SINCE]: new Date().toISOString() };
      if (action === 'publish') delete annotations[ROTATE];
      const body: SecretObj = {
        ...(cur ?? { metadata: { name: o.name, namespace: o.namespace } }),
        type: 'Opaque',
        data: encode(next.data),
      };
      body.metadata = { ...body.metadata, annotations };
      if (cur) await o.kube.request('PUT', path, { body });
      else await o.kube.create(`/api/v1/namespaces/${o.namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', ...body });
      o.log.info({ secret: o.name, action, phase: next.phase }, 'shared certificates updated');
    } finally {
      await releaseLease(o.kube, o.namespace, o.name, o.identity);
    }
  }

  /** Writes the Secret's serving files into dir when they differ (key first, as ensure does). */
  async function copy(s: SecretObj | undefined): Promise<boolean> {
    const d = stateOf(s).data;
    if (!d['tls.crt'] || !d['tls.key'] || !d['ca.crt']) return false;
    await ensureDir(o.dir);
    for (const [file, text, mode] of [
      [FILES.key, d['tls.key'], 0o600],
      [FILES.cert, d['tls.crt'], 0o644],
      [FILES.caCert, d['ca.crt'], 0o644],
    ] as const) {
      if ((await readOptional(join(o.dir, file))) !== text) await writeFileAtomic(join(o.dir, file), text, mode);
    }
    return true;
  }

  async function sync(): Promise<boolean> {
    const s = await get();
    if (plan(stateOf(s), Date.now(), planOpts) !== 'none') await advance();
    return copy(await get());
  }

  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if (await sync()) break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      o.log.warn({ error: (e as Error).message }, 'shared certificates not ready; retrying');
    }
    if (Date.now() > deadline) throw new Error(`Secret ${o.namespace}/${o.name} holds no certificates after 60 s`);
    await new Promise((r) => setTimeout(r, Math.min(o.syncIntervalMs, 1000)));
  }
  // Then on the work queue, one key `ca/sync`: every syncIntervalMs after a success, after
  // the queue's backoff after a failure. One key, not one for the Lease and one for the
  // Secret: the Secret is written only under the Lease, acquire-write-release being one step.
  const queue = o.queue ?? new WorkQueue();
  let stopped = false;
  let lastError = '';
  const q = queue.writer('ca', {
    handle: async () => {
      if (stopped) return;
      await sync();
      lastError = '';
      if (!stopped) q.addAfter('sync', o.syncIntervalMs);
    },
    onError: (_name, e, retryInMs) => {
      if (e.message !== lastError)
        o.log.error({ error: e.message, retryInMs }, 'shared certificates sync failed');
      lastError = e.message;
    },
  });
  q.addAfter('sync', o.syncIntervalMs);
  return {
    stop: () => {
      stopped = true;
      q.forget('sync');
      if (!o.queue) void queue.shutDown();
    },
  };
}
