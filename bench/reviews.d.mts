// Types of bench/reviews.mjs, for the TypeScript callers (test/soak/reviews.ts).

export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  resource: string;
}

export interface EnvVar {
  name: string;
  value: string;
}

export interface Container {
  name: string;
  image: string;
  env?: EnvVar[];
  [field: string]: unknown;
}

export interface DeploymentOptions {
  name?: string;
  namespace?: string;
  labels?: Record<string, string> | null;
  annotations?: Record<string, string> | null;
  replicas?: number;
  app?: string;
  containers?: Container[];
  podSpec?: Record<string, unknown> | null;
}

export interface ReviewOptions {
  uid?: string;
  type?: ResourceType;
  name?: string | null;
  namespace?: string | null;
  operation?: 'CREATE' | 'UPDATE' | 'DELETE';
  userInfo?: { username: string; groups?: string[] } | null;
  oldObject?: unknown;
  dryRun?: boolean | null;
  full?: boolean;
}

export interface PadOptions {
  prefix?: string;
  digits?: number;
  fit?: boolean;
}

export interface Deployment {
  apiVersion: 'apps/v1';
  kind: 'Deployment';
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: {
    replicas: number;
    selector: { matchLabels: { app: string } };
    template: {
      metadata: { labels: { app: string } };
      spec: { containers: Container[]; [field: string]: unknown };
    };
  };
}

export interface AdmissionReview<T> {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  request: {
    uid: string;
    kind: { group: string; version: string; kind: string };
    resource: { group: string; version: string; resource: string };
    operation: string;
    object: T;
    [field: string]: unknown;
  };
}

export const SIZES_KB: number[];
export const DEPLOYMENTS: ResourceType;
export const PODS: ResourceType;
export function numberedUid(i: number, prefix?: string): string;
export function admissionReview<T extends { metadata?: { name?: string; namespace?: string } }>(
  object: T,
  options?: ReviewOptions,
): AdmissionReview<T>;
export function webAndSidecar(): Container[];
export function deployment(options?: DeploymentOptions): Deployment;
export function padEnv(
  env: EnvVar[],
  size: () => number,
  target: number,
  options?: PadOptions,
): EnvVar[];
export function deploymentReview(options: {
  bytes: number;
  i?: number;
  name?: string;
  deployment?: DeploymentOptions;
  review?: ReviewOptions;
  pad?: PadOptions;
  padContainer?: number;
}): string;
export function reviewSet(kb: number, count?: number): string[];
