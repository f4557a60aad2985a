// ExternalMetric (metrics.annex.dev/v1alpha1): one number annex polls from somewhere and
// serves to HorizontalPodAutoscalers, as external.metrics.k8s.io or, with
// `describedObject`, as an object metric of custom.metrics.k8s.io.
import type { KubeObject } from '../core/types.js';
import type { Condition } from '../core/conditions.js';

export const METRIC_GROUP = 'metrics.annex.dev';
export const METRIC_VERSION = 'v1alpha1';
export const METRIC_KIND = 'ExternalMetric';
export const METRIC_PLURAL = 'externalmetrics';
export const EXTERNAL_GROUP = 'external.metrics.k8s.io';
export const CUSTOM_GROUP = 'custom.metrics.k8s.io';

export interface HttpSource {
  url: string;
  /** PEM of the CA that signs an https endpoint's certificate; default the system roots. */
  caBundle?: string;
}

export interface JsonSource extends HttpSource {
  /** JSONPath (jsonpath-plus) to the number: `$.queue.depth`. */
  path: string;
}

export interface PrometheusSource extends HttpSource {
  metric: string;
  /** Equality matchers; the values of every matching series are summed. */
  labels?: Record<string, string>;
}

export interface ObjectsSource {
  /** `v1`, `batch/v1`… */
  apiVersion: string;
  /** Plural: `jobs`, `pods`. */
  resource: string;
  /**
   * Default: the ExternalMetric's namespace; another one, or `*` for every namespace, only
   * if the ExternalMetric's author may list these objects there (access.ts).
   */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface DescribedObject {
  apiVersion: string;
  kind: string;
  name: string;
  /** Plural resource; default the kind's plural by Kubernetes' rules. */
  resource?: string;
}

export interface ExternalMetricSpec {
  /** The name HPAs ask for; default metadata.name. */
  metricName?: string;
  metricLabels?: Record<string, string>;
  describedObject?: DescribedObject;
  json?: JsonSource;
  prometheus?: PrometheusSource;
  objects?: ObjectsSource;
  intervalSeconds?: number;
  timeoutSeconds?: number;
  /** A value older than this is not served; default 3 × intervalSeconds. */
  staleAfterSeconds?: number;
}

export interface ExternalMetricStatus {
  value?: string;
  /** When value was last read successfully. */
  timestamp?: string;
  available?: boolean;
  lastError?: string;
  lastErrorTime?: string;
  observedGeneration?: number;
  /** `Available`: served to HPAs now, or why not (reason SourceRefused, Unauthorized…). */
  conditions?: Condition[];
}

export type ExternalMetric = KubeObject & {
  metadata: KubeObject['metadata'] & { namespace: string; generation?: number; uid?: string };
  spec: ExternalMetricSpec;
  status?: ExternalMetricStatus;
};

export type SourceKind = 'json' | 'prometheus' | 'objects';
