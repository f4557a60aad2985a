// The slice of a Pod the Pod Security Standards read. Fields are optional and nullable the
// way a JSON Pod is; a check treats null like absent (Go's nil pointer).
export type Level = 'privileged' | 'baseline' | 'restricted';
/** `latest` or `v1.N`, as the `pod-security.kubernetes.io/<mode>-version` label spells it. */
export type PolicyVersion = string;

/** One failed check: what PodSecurity prints as `<reason> (<detail>)`. */
export interface Violation {
  reason: string;
  detail: string;
}

type Maybe<T> = T | null | undefined;

export interface PodMeta {
  annotations?: Maybe<Record<string, string>>;
}

export interface Handler {
  httpGet?: Maybe<{ host?: Maybe<string> }>;
  tcpSocket?: Maybe<{ host?: Maybe<string> }>;
}

export interface SecurityContext {
  allowPrivilegeEscalation?: Maybe<boolean>;
  privileged?: Maybe<boolean>;
  capabilities?: Maybe<{ add?: Maybe<string[]>; drop?: Maybe<string[]> }>;
  procMount?: Maybe<string>;
  runAsNonRoot?: Maybe<boolean>;
  runAsUser?: Maybe<number>;
  seLinuxOptions?: Maybe<{ type?: Maybe<string>; user?: Maybe<string>; role?: Maybe<string> }>;
  seccompProfile?: Maybe<{ type?: Maybe<string> }>;
  appArmorProfile?: Maybe<{ type?: Maybe<string> }>;
  windowsOptions?: Maybe<{ hostProcess?: Maybe<boolean> }>;
}

export interface Container {
  name: string;
  ports?: Maybe<{ hostPort?: Maybe<number> }[]>;
  securityContext?: Maybe<SecurityContext>;
  livenessProbe?: Maybe<Handler>;
  readinessProbe?: Maybe<Handler>;
  startupProbe?: Maybe<Handler>;
  lifecycle?: Maybe<{ postStart?: Maybe<Handler>; preStop?: Maybe<Handler> }>;
}

export interface PodSpec {
  os?: Maybe<{ name?: Maybe<string> }>;
  hostNetwork?: Maybe<boolean>;
  hostPID?: Maybe<boolean>;
  hostIPC?: Maybe<boolean>;
  hostUsers?: Maybe<boolean>;
  volumes?: Maybe<({ name: string } & Record<string, unknown>)[]>;
  securityContext?: Maybe<
    Omit<
      SecurityContext,
      'allowPrivilegeEscalation' | 'privileged' | 'capabilities' | 'procMount'
    > & {
      sysctls?: Maybe<{ name: string }[]>;
    }
  >;
  initContainers?: Maybe<Container[]>;
  containers?: Maybe<Container[]>;
  ephemeralContainers?: Maybe<Container[]>;
}

/** A check at one version: undefined when the pod passes. */
export type CheckFn = (meta: PodMeta, spec: PodSpec) => Violation | undefined;
