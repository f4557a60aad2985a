// Each object's JSON as served, made once per object and kept as UTF-8 bytes: snapshots are
// immutable and providers reuse unchanged objects, so a 10,000-item list is a copy of bytes
// encoded before, not 10,000 stringifications and a 4 MB string to re-encode per request.
// Where creationTimestamp is the response time (ResourceDecl.creationTimestampIsNow), the
// bytes are split around that value and each response splices its own second in, so the
// encoding outlives the second (and every scrape that leaves the object as it was).
import { randomBytes } from 'node:crypto';
import type { KubeObject } from '../core/types.js';

/** A value no object holds: marks where the response time goes. */
const SLOT = `\u0000annex-now-${randomBytes(8).toString('hex')}\u0000`;
const SLOT_JSON = JSON.stringify(SLOT);
const COMMA = Buffer.from(',');

interface Encoded {
  head: Buffer;
  /** Present when the response time goes between head and tail. */
  tail?: Buffer;
}

/** metav1.Time of `now`: RFC 3339, whole seconds. */
export const kubeTimeOf = (now: Date): string => now.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The object with metadata.creationTimestamp set to `time`, keeping the key order. */
export function withCreationTimestamp(o: KubeObject, time: string): KubeObject {
  return { ...o, metadata: { ...o.metadata, creationTimestamp: time } };
}

export class ObjectEncoder {
  private readonly cache = new WeakMap<KubeObject, Encoded>();

  /**
   * `serve` turns a provider's object into the one served (apiVersion and kind of the
   * group/version); `timeIsNow` splices the response time into creationTimestamp.
   */
  constructor(
    private readonly serve: (o: KubeObject) => KubeObject,
    private readonly timeIsNow: boolean,
  ) {}

  private encoded(o: KubeObject): Encoded {
    let e = this.cache.get(o);
    if (e) return e;
    const served = this.serve(o);
    if (!this.timeIsNow) {
      e = { head: Buffer.from(JSON.stringify(served)) };
    } else {
      const json = JSON.stringify(withCreationTimestamp(served, SLOT));
      const at = json.indexOf(SLOT_JSON);
      e = {
        head: Buffer.from(json.slice(0, at)),
        tail: Buffer.from(json.slice(at + SLOT_JSON.length)),
      };
    }
    this.cache.set(o, e);
    return e;
  }

  private push(parts: Buffer[], o: KubeObject, time: Buffer): void {
    const e = this.encoded(o);
    parts.push(e.head);
    if (e.tail) parts.push(time, e.tail);
  }

  /** One object's JSON. */
  one(o: KubeObject, now: Date): Buffer {
    const parts: Buffer[] = [];
    this.push(parts, o, Buffer.from(JSON.stringify(kubeTimeOf(now))));
    return Buffer.concat(parts);
  }

  /** `open`, the objects' JSON separated by commas, `close`: a list body. */
  list(open: string, objects: readonly KubeObject[], close: string, now: Date): Buffer {
    const time = Buffer.from(JSON.stringify(kubeTimeOf(now)));
    const parts: Buffer[] = [Buffer.from(open)];
    for (let i = 0; i < objects.length; i++) {
      if (i > 0) parts.push(COMMA);
      this.push(parts, objects[i]!, time);
    }
    parts.push(Buffer.from(close));
    return Buffer.concat(parts);
  }
}
