// external.metrics.k8s.io/v1beta1 and custom.metrics.k8s.io/v1beta2 over the polled
// ExternalMetrics. Their URLs are not one object per name (the "resource" is the metric, or
// the described object's group-resource with the metric as subresource), so each group
// answers its requests itself (GroupVersionDecl.read) after the framework's authentication
// and authorization; discovery lists one placeholder resource per group, as
// custom-metrics-apiserver does, because the HPA never reads these resource lists (see
// docs/architecture.md) and an empty list makes client-go complain on every call.
import { ObjectStore } from '../apiserver/object-store.js';
import { resource } from '../apiserver/resource.js';
import { parseLabelSelector } from '../apiserver/selectors/label.js';
import { notFoundPath, StatusError } from '../core/status.js';
import type { GroupVersionDecl, ReadRequest } from '../core/types.js';
import type { MetricPoller } from './poller.js';
import {
  CUSTOM_GROUP,
  EXTERNAL_GROUP,
  type DescribedObject,
  type ExternalMetric,
} from './types.js';

export type Pollers = () => Iterable<MetricPoller>;

export const metricNameOf = (m: ExternalMetric) => m.spec.metricName ?? m.metadata.name;

/** apimachinery's UnsafeGuessKindToResource: Ingress → ingresses, Policy → policies. */
export function guessResource(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower.endsWith('s')) return `${lower}es`;
  if (lower.endsWith('y')) return `${lower.slice(0, -1)}ies`;
  return `${lower}s`;
}

/** The group-resource the HPA's client puts in the URL: `deployments.apps`, `services`. */
export function qualifiedResourceOf(o: DescribedObject): string {
  const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
  const plural = o.resource ?? guessResource(o.kind);
  return group ? `${plural}.${group}` : plural;
}

const selectorText = (s: string) => (s ? ` with selector ${s}` : '');

/** custom-metrics-apiserver's 404 wording (pkg/provider/errors.go). */
function metricNotFound(group: string, metric: string, what: string, selector: string) {
  return new StatusError(
    404,
    'NotFound',
    `the server could not find the metric ${metric} for ${what}${selectorText(selector)}`,
    { group, kind: metric },
  );
}

function unavailable(p: MetricPoller, metric: string, reason: string) {
  const { namespace, name } = p.metric.metadata;
  return new StatusError(
    503,
    'ServiceUnavailable',
    `metric ${metric} is unavailable (ExternalMetric ${namespace}/${name}): ${reason}`,
  );
}

const placeholder = (kind: string, plural: string, description: string) =>
  resource({
    kind,
    plural,
    singular: '',
    description,
    fields: { items: { type: 'array', description: 'The values.', items: { type: 'object' } } },
    verbs: ['get'],
    // Never read: the group's `read` answers every resource request.
    provider: new ObjectStore(),
  });

function selectorOf(req: ReadRequest, param: string) {
  const text = req.query.get(param) ?? '';
  return { text, selector: parseLabelSelector(text) };
}

export function externalMetricsGroup(pollers: Pollers): GroupVersionDecl {
  const version = 'v1beta1';
  return {
    group: EXTERNAL_GROUP,
    versions: [version],
    resources: [
      placeholder(
        'ExternalMetricValueList',
        'externalmetrics',
        'External metrics: GET /namespaces/<ns>/<metric>?labelSelector=… (ExternalMetrics of metrics.annex.dev).',
      ),
    ],
    apiService: {
      shared: true,
      description:
        'external.metrics.k8s.io: the ExternalMetrics (metrics.annex.dev) without describedObject, for HPA metrics of type External.\nShared with KEDA: annex leaves the group to another Service that serves it unless registration.replaceOwners lists it.',
    },
    read: (req) => {
      // Only /namespaces/<ns>/<metric>: the HPA's client always names a namespace.
      if (!req.namespace || req.name !== '' || !req.resource) throw notFoundPath();
      const { text, selector } = selectorOf(req, 'labelSelector');
      const matching = [...pollers()].filter(
        (p) =>
          !p.metric.spec.describedObject &&
          p.metric.metadata.namespace === req.namespace &&
          metricNameOf(p.metric) === req.resource &&
          selector.matches(p.metric.spec.metricLabels ?? {}),
      );
      if (matching.length === 0) {
        throw metricNotFound(EXTERNAL_GROUP, req.resource, `namespace ${req.namespace}`, text);
      }
      // One unavailable series fails the whole answer: a partial sum would under-scale.
      const items = matching.map((p) => {
        const a = p.availability();
        if (!a.ok) throw unavailable(p, req.resource, a.reason);
        return {
          metricName: req.resource,
          metricLabels: p.metric.spec.metricLabels ?? {},
          timestamp: a.reading.at.toISOString(),
          window: p.timing.intervalMs / 1000,
          value: a.reading.quantity,
        };
      });
      return {
        kind: 'ExternalMetricValueList',
        apiVersion: `${EXTERNAL_GROUP}/${version}`,
        metadata: {},
        items,
      };
    },
  };
}

/** What the request asks for: the group-resource, object name (or `*`) and metric. */
function objectTarget(req: ReadRequest) {
  // /namespaces/<ns>/metrics/<metric>: a metric of the namespace itself.
  if (req.resource === 'metrics' && req.subresource === '') {
    return { resource: 'namespaces', name: req.namespace, metric: req.name };
  }
  return { resource: req.resource, name: req.name, metric: req.subresource };
}

export function customMetricsGroup(pollers: Pollers): GroupVersionDecl {
  const version = 'v1beta2';
  return {
    group: CUSTOM_GROUP,
    versions: [version],
    resources: [
      placeholder(
        'MetricValueList',
        'custommetrics',
        'Object metrics: GET /namespaces/<ns>/<resource>.<group>/<name>/<metric> (ExternalMetrics with describedObject).',
      ),
    ],
    apiService: {
      shared: true,
      description:
        'custom.metrics.k8s.io: the ExternalMetrics (metrics.annex.dev) with a describedObject, for HPA metrics of type Object.\nShared with prometheus-adapter: annex leaves the group to another Service that serves it unless registration.replaceOwners lists it.',
    },
    read: (req) => {
      if (req.verb !== 'get' || !req.namespace) throw notFoundPath();
      const t = objectTarget(req);
      if (!t.name || !t.metric) throw notFoundPath();
      const { text, selector } = selectorOf(req, 'metricLabelSelector');
      const matching = [...pollers()].filter((p) => {
        const o = p.metric.spec.describedObject;
        if (!o || p.metric.metadata.namespace !== req.namespace) return false;
        const resourceOf =
          o.kind === 'Namespace' && !o.apiVersion.includes('/')
            ? 'namespaces'
            : qualifiedResourceOf(o);
        return (
          resourceOf === t.resource &&
          (t.name === '*' || o.name === t.name) &&
          metricNameOf(p.metric) === t.metric &&
          selector.matches(p.metric.spec.metricLabels ?? {})
        );
      });
      if (matching.length === 0) {
        throw metricNotFound(
          CUSTOM_GROUP,
          t.metric,
          `${t.resource} ${req.namespace}/${t.name}`,
          text,
        );
      }
      const items = matching.map((p) => {
        const a = p.availability();
        if (!a.ok) throw unavailable(p, t.metric, a.reason);
        const o = p.metric.spec.describedObject!;
        return {
          describedObject: {
            kind: o.kind,
            ...(o.kind === 'Namespace' ? {} : { namespace: req.namespace }),
            name: o.name,
            apiVersion: o.apiVersion,
          },
          metric: { name: t.metric },
          timestamp: a.reading.at.toISOString(),
          windowSeconds: p.timing.intervalMs / 1000,
          value: a.reading.quantity,
        };
      });
      return {
        kind: 'MetricValueList',
        apiVersion: `${CUSTOM_GROUP}/${version}`,
        metadata: {},
        items,
      };
    },
  };
}
