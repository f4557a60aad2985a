// An aggregated API group is declared as data plus a provider, as k8s.io/apiserver
// declares a resource as its names + scope + storage interfaces. The generic endpoint
// code (discovery, OpenAPI, list/get/watch, Table) serves every declaration the same way.

/** A JSON Schema (draft-07 subset that both ajv and OpenAPI v2/v3 understand). */
export type JsonSchema = Record<string, unknown>;

export interface TableColumn {
  /** Header as kubectl prints it upper-cased: "Name", "CPU", "Memory", "Window". */
  name: string;
  /** OpenAPI type of the cell: string, integer, number, boolean, date. */
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string;
  description: string;
  /** JSONPath (jsonpath-plus syntax) evaluated against the object; first match is the cell. */
  jsonPath: string;
  /** Computes the cell instead of jsonPath, for values a path cannot express (sums). */
  value?: (obj: KubeObject) => unknown;
  /** 0 = shown by default; higher = only with -o wide. */
  priority?: number;
}

/** Any Kubernetes-shaped object a provider returns. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
    resourceVersion?: string;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export type Verb = 'get' | 'list' | 'watch';

export interface ResourceDecl {
  kind: string;
  /** Plural, lower-case: the URL segment ("nodes", "pods"). */
  plural: string;
  singular: string;
  shortNames?: string[];
  categories?: string[];
  namespaced: boolean;
  verbs: Verb[];
  schema: JsonSchema;
  columns: TableColumn[];
  /** Field selectors beyond metadata.name / metadata.namespace: selector key → JSONPath. */
  selectableFields?: Record<string, string>;
  provider: Provider;
  /**
   * metadata.creationTimestamp is the time of each response, as metrics-server makes its
   * objects per request: the framework writes the current second into every object it
   * serves (list, get, Table, watch), in the key position the provider's objects have.
   */
  creationTimestampIsNow?: boolean;
}

export interface GroupVersionDecl {
  group: string;
  /** Versions served with the same resources, preferred first (e.g. ["v1beta1"]). */
  versions: string[];
  resources: ResourceDecl[];
  /**
   * Answers every resource request of the group itself, for APIs whose URLs are not one
   * object per name: the metric APIs, where the "resource" is a metric
   * (external.metrics.k8s.io) or the described object's group-resource with the metric
   * as subresource (custom.metrics.k8s.io). The request is authenticated and authorized
   * as any other; only get and list reach it (writes and watch are 405). `resources` is
   * then what discovery and OpenAPI publish (placeholders), never served generically.
   * Returns the JSON body; a failure is a thrown StatusError.
   */
  read?: (request: ReadRequest) => unknown;
  /** How the group is registered with the aggregator (rendered into its APIServices). */
  apiService?: {
    /** Default 100. */
    groupPriorityMinimum?: number;
    /** By version; default 100 × (versions after it + 1), so the first is preferred. */
    versionPriority?: Record<string, number>;
    /** Rendered as the comment above the APIService YAML. */
    description?: string;
    /**
     * A group other projects serve too (metrics-server, KEDA, prometheus-adapter): annex
     * registers it only while no APIService of the group points at another Service, unless
     * registration.replaceOwners names it (src/manifests/ownership.ts).
     */
    shared?: boolean;
  };
}

/** A resource request as a group's own `read` handler receives it, parsed once. */
export interface ReadRequest {
  verb: 'get' | 'list';
  group: string;
  version: string;
  /** Empty for a cluster-scoped path. */
  namespace: string;
  resource: string;
  name: string;
  subresource: string;
  /** Path segments from the resource on: resource/name/subresource/... */
  parts: readonly string[];
  query: URLSearchParams;
}

/**
 * A consistent view of a resource at one resourceVersion. Objects are never mutated once
 * handed out (a change is a new object and a new resourceVersion): the framework pages
 * old snapshots and caches each object's serialized form by identity.
 */
export interface Snapshot {
  resourceVersion: string;
  items: KubeObject[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  type: WatchEventType;
  object: KubeObject;
}

/**
 * Where a resource's objects come from. `snapshot` returns every object of the
 * resource (all namespaces) at one resourceVersion; the framework filters, pages and
 * converts. `subscribe` delivers later changes; it returns an unsubscribe function.
 */
export interface Provider {
  snapshot(): Promise<Snapshot> | Snapshot;
  /**
   * Events strictly after `resourceVersion`, then live ones. Throws a Status 410 error
   * (`expired` or `gone`, exported by annex) when that version is too old to replay.
   */
  subscribe?(
    resourceVersion: string,
    onEvent: (event: WatchEvent, resourceVersion: string) => void,
  ): () => void;
}
