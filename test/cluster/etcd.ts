// What the API server actually stored: raw keys read from the test control plane's etcd
// through its JSON gateway (POST /v3/kv/range, keys and values base64), no etcdctl needed.
// Custom resources are stored as JSON, so their stored apiVersion can be read directly.
import type { ClusterInfo } from './harness.js';

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

/** The end of a prefix range: the prefix with its last byte incremented (etcdctl --prefix). */
function prefixEnd(prefix: string): string {
  const bytes = Buffer.from(prefix);
  bytes[bytes.length - 1]! += 1;
  return b64(bytes);
}

/** Every key under `prefix` → its value parsed as JSON, in key order. */
export async function storedUnder(c: ClusterInfo, prefix: string): Promise<Map<string, any>> {
  const res = await fetch(`${c.etcd}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: b64(prefix), range_end: prefixEnd(prefix) }),
  });
  if (!res.ok) throw new Error(`etcd range ${prefix}: ${res.status} ${await res.text()}`);
  const { kvs = [] } = (await res.json()) as { kvs?: { key: string; value: string }[] };
  return new Map(
    kvs.map((kv) => [
      Buffer.from(kv.key, 'base64').toString(),
      JSON.parse(Buffer.from(kv.value, 'base64').toString()),
    ]),
  );
}

/** The stored objects of a namespaced custom resource in one namespace, by name. */
export async function storedCustomResources(
  c: ClusterInfo,
  group: string,
  plural: string,
  namespace: string,
): Promise<Record<string, any>> {
  const prefix = `/registry/${group}/${plural}/${namespace}/`;
  const out: Record<string, any> = {};
  for (const [k, v] of await storedUnder(c, prefix)) out[k.slice(prefix.length)] = v;
  return out;
}
