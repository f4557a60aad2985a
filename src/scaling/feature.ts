// "Scale on anything" as a Feature: list + watch the ExternalMetrics (re-listing on 410),
// poll each one's source, write what it read to its status (server-side apply, field
// manager annex, on changes only), and serve the values to HorizontalPodAutoscalers as
// external.metrics.k8s.io and custom.metrics.k8s.io. Its webhook records each metric's
// author (author.ts); its sources reach only what scaling.allow lists (outbound.ts).
import { AccessReviewer } from '../apiserver/auth/subject-access-review.js';
import { startWatch } from '../kube/reflector.js';
import type { Logger } from '../log.js';
import type { Feature } from '../core/feature.js';
import { AUTHOR_ANNOTATION, authorWebhook } from './author.js';
import type { ScalingConfig } from './config.js';
import { customMetricsGroup, externalMetricsGroup } from './groups.js';
import { OutboundPolicy } from './outbound.js';
import { MetricPoller, type PollContext } from './poller.js';
import {
  METRIC_GROUP,
  METRIC_KIND,
  METRIC_PLURAL,
  METRIC_VERSION,
  type ExternalMetric,
  type ExternalMetricStatus,
} from './types.js';

const FIELD_MANAGER = 'annex';
const METRICS_PATH = `/apis/${METRIC_GROUP}/${METRIC_VERSION}/${METRIC_PLURAL}`;
const keyOf = (m: ExternalMetric) => `${m.metadata.namespace}/${m.metadata.name}`;

export interface ScalingFeature extends Feature {
  /** The pollers by namespace/name (tests). */
  readonly pollers: ReadonlyMap<string, MetricPoller>;
}

/**
 * The feature, built from its section (`scaling:`, ./config.ts): the groups it declares
 * depend on it. A UserError names a malformed scaling.allow entry.
 */
export function scalingFeature(
  settings: Pick<ScalingConfig, 'allow'> & Partial<Pick<ScalingConfig, 'registerMetricsApis'>>,
): ScalingFeature {
  const outbound = OutboundPolicy.from(settings.allow);
  const pollers = new Map<string, MetricPoller>();
  let stopWatch: (() => void) | undefined;
  let synced = false;
  let lastError = '';
  let ctx: PollContext = { kube: null, outbound, reviewer: null };
  let log: Logger | undefined;

  const writeStatus = async (m: ExternalMetric, status: ExternalMetricStatus) => {
    const kube = ctx.kube;
    if (!kube) return;
    const { namespace, name } = m.metadata;
    const path = `/apis/${METRIC_GROUP}/${METRIC_VERSION}/namespaces/${encodeURIComponent(namespace)}/${METRIC_PLURAL}/${encodeURIComponent(name)}/status`;
    try {
      await kube.patch(
        path,
        {
          apiVersion: `${METRIC_GROUP}/${METRIC_VERSION}`,
          kind: METRIC_KIND,
          metadata: { name, namespace },
          status,
        },
        'apply',
        { fieldManager: FIELD_MANAGER, force: true },
      );
    } catch (e) {
      // Deleted meanwhile (404): its DELETED event stops the poller.
      log?.debug(
        { metric: `${namespace}/${name}`, error: (e as Error).message },
        'status not written',
      );
    }
  };

  const put = (m: ExternalMetric) => {
    const key = keyOf(m);
    const known = pollers.get(key);
    // Status writes come back as MODIFIED with the same generation: keep polling as is. The
    // author changes only with the spec, unless written while annex's webhook was not there.
    const author = (o: ExternalMetric) => o.metadata.annotations?.[AUTHOR_ANNOTATION];
    if (
      known &&
      known.metric.metadata.uid === m.metadata.uid &&
      known.metric.metadata.generation === m.metadata.generation &&
      author(known.metric) === author(m)
    ) {
      return;
    }
    known?.stop();
    const poller = new MetricPoller(m, ctx, () => {
      const s = poller.status();
      if (s.lastError) log?.warn({ metric: key, error: s.lastError }, 'metric source failed');
      void writeStatus(m, s);
    });
    pollers.set(key, poller.start());
  };

  const remove = (key: string) => {
    pollers.get(key)?.stop();
    pollers.delete(key);
  };

  const all = () => pollers.values();
  return {
    name: 'scaling',
    pollers,
    groups:
      settings.registerMetricsApis === false
        ? []
        : [externalMetricsGroup(all), customMetricsGroup(all)],
    webhooks: [authorWebhook()],
    start: (f) => {
      if (!f.kube) {
        throw new Error(
          'scaling reads ExternalMetrics from an API server: set kube.kubeconfig or run in a cluster',
        );
      }
      ctx = { kube: f.kube, outbound, reviewer: new AccessReviewer(f.kube) };
      log = f.log;
      stopWatch = startWatch<ExternalMetric>(
        f.kube,
        METRICS_PATH,
        {},
        (e) => {
          if (e.type === 'RELISTED') {
            const keep = new Set(e.items.map(keyOf));
            for (const key of [...pollers.keys()]) if (!keep.has(key)) remove(key);
            for (const m of e.items) put(m);
            synced = true;
            lastError = '';
          } else if (e.type === 'DELETED') remove(keyOf(e.object));
          else if (e.type !== 'BOOKMARK') put(e.object);
        },
        (err) => {
          lastError = err.message.split('\n')[0]!;
          f.log.warn({ error: lastError }, 'watching ExternalMetrics');
        },
      );
    },
    stop: () => {
      stopWatch?.();
      for (const p of pollers.values()) p.stop();
      pollers.clear();
    },
    ready: () =>
      synced ||
      `ExternalMetrics not listed yet${lastError ? ` (${lastError}; is manifests/crds/externalmetrics.yaml applied?)` : ''}`,
  };
}
