// A coordination.k8s.io/v1 Lease as a mutex between replicas, with the API server as the
// coordinator: the holder is whoever last wrote holderIdentity with an unexpired renewTime;
// every write is guarded by resourceVersion, so two replicas can never both win.
import type { KubeClient } from './client.js';
import { KubeApiError } from './errors.js';

interface Lease {
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
  };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
  };
}

/** MicroTime, as the API server writes it. */
const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export const leasePath = (ns: string, name: string) =>
  `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${name}`;

const conflict = (e: unknown) => e instanceof KubeApiError && (e.code === 409 || e.code === 404);

/** Takes the Lease for `identity` if it is free, expired or already ours; false if held. */
export async function tryAcquireLease(
  kube: KubeClient,
  ns: string,
  name: string,
  identity: string,
  durationSeconds: number,
  now = new Date(),
): Promise<boolean> {
  let cur: Lease | undefined;
  try {
    cur = await kube.get<Lease>(leasePath(ns, name));
  } catch (e) {
    if (!(e instanceof KubeApiError && e.code === 404)) throw e;
  }
  const spec = cur?.spec ?? {};
  const held =
    spec.holderIdentity &&
    spec.holderIdentity !== identity &&
    spec.renewTime &&
    Date.parse(spec.renewTime) + (spec.leaseDurationSeconds ?? durationSeconds) * 1000 >
      now.getTime();
  if (held) return false;
  const body: Lease = {
    ...(cur ?? { metadata: { name, namespace: ns } }),
    spec: {
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: microTime(now),
      renewTime: microTime(now),
    },
  };
  try {
    if (cur) await kube.request('PUT', leasePath(ns, name), { body });
    else
      await kube.create(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        ...body,
      });
    return true;
  } catch (e) {
    if (conflict(e)) return false; // another replica wrote first
    throw e;
  }
}

/** Gives the Lease up if `identity` still holds it (errors ignored: it expires anyway). */
export async function releaseLease(kube: KubeClient, ns: string, name: string, identity: string) {
  try {
    const cur = await kube.get<Lease>(leasePath(ns, name));
    if (cur.spec?.holderIdentity !== identity) return;
    await kube.request('PUT', leasePath(ns, name), { body: { ...cur, spec: {} } });
  } catch {
    // expires after leaseDurationSeconds
  }
}
