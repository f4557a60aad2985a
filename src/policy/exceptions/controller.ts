// The PolicyException controller: watches PolicyExceptions into the shared state (what
// every evaluation reads) and writes each one's status on the work queue
// (`policy-exceptions/<namespace>/<name>`), again whenever the AdmissionPolicies change.
// `changed` tells the policy controller, which re-plans: a policy named by an exception
// leaves the API server's CEL for annex's webhook.
import type { WriterQueue, WorkQueue } from '../../core/feature.js';
import { KubeApiError, type KubeClient } from '../../kube/client.js';
import { startWatch } from '../../kube/reflector.js';
import type { Logger } from '../../log.js';
import type { PolicyState } from '../state.js';
import { POLICY_GROUP, POLICY_VERSION, type AdmissionPolicy } from '../types.js';
import { compileException, ExceptionError, type CompiledException } from './match.js';
import { exceptionStatus, exceptionStatusKey } from './status.js';
import {
  EXCEPTION_KIND,
  EXCEPTION_PLURAL,
  EXCEPTIONS_PATH,
  type PolicyException,
} from './types.js';

const FIELD_MANAGER = 'annex';
const keyOf = (o: PolicyException) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export class ExceptionController {
  private readonly latest = new Map<string, PolicyException>();
  private readonly written = new Map<string, string>();
  private writes: WriterQueue | undefined;
  private kube: KubeClient | undefined;
  private stopWatch: (() => void) | undefined;
  private listed = false;

  constructor(
    private readonly state: PolicyState,
    private readonly opts: {
      /** The AdmissionPolicy objects as last watched, by name. */
      policy(name: string): AdmissionPolicy | undefined;
      /** After every change of the exception set. */
      changed(): void;
    },
  ) {}

  start(k: KubeClient, l: Logger, queue: WorkQueue): void {
    this.kube = k;
    this.writes = queue.writer('policy-exceptions', {
      handle: (key) => this.writeStatus(key),
      onError: (key, e, retryInMs) =>
        l.warn({ exception: key, error: e.message, retryInMs }, 'status not written; retrying'),
    });
    const compile = (o: PolicyException): CompiledException[] => {
      try {
        return [compileException(o)];
      } catch (e) {
        // The CRD's schema refuses these; one stored before it was tightened is left out.
        if (!(e instanceof ExceptionError)) throw e;
        l.warn({ exception: keyOf(o), error: e.message }, 'PolicyException ignored');
        return [];
      }
    };
    this.stopWatch = startWatch<PolicyException>(
      k,
      EXCEPTIONS_PATH,
      {},
      (e) => {
        if (e.type === 'BOOKMARK') return;
        if (e.type === 'RELISTED') {
          this.latest.clear();
          for (const o of e.items) this.latest.set(keyOf(o), o);
          this.state.exceptions.replace(e.items.flatMap(compile));
          this.listed = true;
          l.info({ exceptions: e.items.length }, 'listed PolicyExceptions');
        } else if (e.type === 'DELETED') {
          const key = keyOf(e.object);
          this.latest.delete(key);
          this.written.delete(key);
          this.state.exceptions.delete(key);
        } else {
          const key = keyOf(e.object);
          this.latest.set(key, e.object);
          const c = compile(e.object);
          if (c[0]) this.state.exceptions.put(c[0]);
          else this.state.exceptions.delete(key);
        }
        this.opts.changed();
        this.refreshStatuses();
      },
      (err) => l.warn({ error: err.message }, 'PolicyException watch failed; retrying'),
    );
  }

  stop(): void {
    this.stopWatch?.();
  }

  /** Not ready before the first list: a review must not miss an exception that exists. */
  ready(): true | string {
    return this.listed || 'PolicyExceptions not listed yet';
  }

  /** Queues the status writes that would change what an exception holds. */
  refreshStatuses(): void {
    for (const [key, obj] of this.latest) if (this.desired(obj)) this.writes?.add(key);
  }

  private desired(obj: PolicyException) {
    const status = exceptionStatus(obj, (n) => this.opts.policy(n), new Date());
    const key = exceptionStatusKey(status);
    const held = obj.status ? exceptionStatusKey(obj.status) : '';
    if (this.written.get(keyOf(obj)) === key || held === key) return undefined;
    return status;
  }

  private async writeStatus(key: string): Promise<void> {
    const obj = this.latest.get(key);
    if (!obj || !this.kube) return;
    const status = this.desired(obj);
    if (!status) return;
    this.written.set(key, exceptionStatusKey(status));
    const { namespace = '', name } = obj.metadata;
    try {
      await this.kube.patch(
        `/apis/${POLICY_GROUP}/${POLICY_VERSION}/namespaces/${encodeURIComponent(namespace)}/${EXCEPTION_PLURAL}/${encodeURIComponent(name)}/status`,
        {
          apiVersion: `${POLICY_GROUP}/${POLICY_VERSION}`,
          kind: EXCEPTION_KIND,
          metadata: { name, namespace },
          status,
        },
        'apply',
        { fieldManager: FIELD_MANAGER, force: true },
      );
    } catch (e) {
      this.written.delete(key);
      if (e instanceof KubeApiError && e.code === 404) return; // gone meanwhile
      throw e;
    }
  }
}
