// annex's public API: everything a user needs to extend a Kubernetes API server from
// TypeScript in one file of their own. The built-in features use this and src/core, and
// nothing else but the exceptions scripts/layers.mjs lists with their reasons (checked by
// test/unit/layering.test.ts).

// The Feature contract, and a server that runs features.
export {
  defineFeature,
  type EventInput,
  type Feature,
  type FeatureConfig,
  type FeatureContext,
  type FeatureEventOptions,
  type FeatureEvents,
  type ObjectReference,
} from './core/feature.js';
export { declareConfig, type DeclaredSection } from './core/config.js';
export { serve, startAnnex, type Annex, type ServeOptions } from './server/start.js';
export { loadConfig, type Config, type ConfigOverrides } from './config/load.js';
// The error of a mistake the user can fix (a setting, a file, a declaration): one line.
export { UserError } from './errors.js';
export { createLogger, type Logger } from './log.js';

// Admission webhooks: declare, decide, answer.
export {
  mutatingWebhook,
  validatingWebhook,
  type Admit,
  type LabelSelectorSpec,
  type Registration,
  type ReviewContext,
  type RuleWithOperations,
  type Webhook,
  type WebhookInit,
} from './admission/webhook.js';
export {
  allow,
  deny,
  denyInvalid,
  invalidField,
  mutate,
  type FieldCause,
  type Verdict,
} from './admission/verdict.js';
export { podSpecOfRequest as podSpecOf, type Container } from './admission/webhooks/pod-specs.js';
export type { AdmissionRequest, GroupVersionKind, Operation } from './admission/review.js';
export {
  fieldErrorMessage,
  goQuote,
  validateName,
  validateObjectName,
  type NameRule,
} from './admission/names/index.js';

// CRD conversion webhooks: every version to and from a hub.
export {
  crdConversion,
  type Conversion,
  type ConversionInit,
  type Convertible,
  type CrdSpec,
  type CrdVersion,
} from './conversion/declare.js';

// Aggregated API groups: resources as data + a provider.
export type {
  GroupVersionDecl,
  JsonSchema,
  KubeObject,
  Provider,
  ReadRequest,
  ResourceDecl,
  Snapshot,
  TableColumn,
  Verb,
  WatchEvent,
} from './core/types.js';
export { ObjectStore } from './apiserver/object-store.js';
export { resource, type ResourceInit } from './apiserver/resource.js';
export { WatchHistory } from './apiserver/watch-history.js';
export {
  StatusError,
  badRequest,
  expired,
  forbidden,
  gone,
  internalError,
  invalid,
  notFound,
  notFoundPath,
  type Status,
  type StatusCause,
  type StatusReason,
} from './core/status.js';

// Kubernetes' resource.Quantity, exact (BigInt), with apimachinery's canonical forms.
export {
  canonicalQuantity,
  formatBinarySI,
  formatCpu,
  formatDecimalSI,
  formatMemory,
  parseBytes,
  parseNanocores,
  parseQuantity,
  quantityValue,
  topCpu,
  topMemory,
} from './apiserver/quantity.js';
export { isObject, type JsonObject } from './json.js';
// Selectors with apimachinery's grammar and messages, for groups that read requests themselves.
export { parseLabelSelector, type LabelSelector } from './apiserver/selectors/label.js';
// The Prometheus text format (0.0.4), strict: a corrupt body yields no samples at all.
export { ParseError, parsePrometheusText, type Sample } from './metrics/prometheus-text.js';

// Talking to the API server annex extends.
export { KubeClient, KubeApiError, type KubeList, type Query } from './kube/client.js';
export { mirror, type Mirror } from './apiserver/mirror.js';
// List + watch (re-list on 410) of any path, for features that react to objects themselves.
export { startWatch as listWatch, type WatchEvent as ListWatchEvent } from './kube/reflector.js';
export { fileToken, type FileToken } from './kube/token.js';
// May this user do this? A SubjectAccessReview (allow and deny cached 10 s): for a feature
// that acts for a user with its own identity, as annex's ExternalMetric counts do.
export {
  AccessReviewer,
  type AccessDecision,
  type SubjectAccessReviewSpec,
} from './apiserver/auth/subject-access-review.js';
// Status conditions in Kubernetes' form (metav1.Condition, meta.SetStatusCondition).
export { conditionsSchema, setCondition, type Condition } from './core/conditions.js';

// Registration objects rendered from declarations.
export {
  apiServices,
  crdConversionSpec,
  customResourceDefinition,
  renderObjects,
  webhookConfiguration,
  type ClientTarget,
  type ServiceRef,
} from './manifests/render.js';
