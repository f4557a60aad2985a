// SetDefaults_Container, probes, handlers, ports and env (pkg/apis/core/v1/defaults.go).
import { canonicalQuantity } from '../../apiserver/quantity.js';
import { child, isObject, isUnset, maybeChild, objectsIn, setDefault } from './util.js';
import type { JsonObject } from './util.js';

// The docker reference grammar (distribution/reference), enough to tell parsable from not.
const domainComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const nameComponent = '[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*';
const referenceRe = new RegExp(
  `^(?:${domainComponent}(?:\\.${domainComponent})*(?::[0-9]+)?/)?` +
    `${nameComponent}(?:/${nameComponent})*` +
    '(?::([\\w][\\w.-]{0,127}))?' +
    '(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$',
);

/**
 * imagePullPolicy from the image reference: no tag and no digest means `latest`; tag `latest`
 * → Always, anything else (a digest, another tag, an unparsable reference) → IfNotPresent.
 */
export function defaultPullPolicy(image: unknown): 'Always' | 'IfNotPresent' {
  if (typeof image !== 'string') return 'IfNotPresent';
  const m = referenceRe.exec(image);
  if (!m) return 'IfNotPresent';
  const [, tag, digest] = m;
  const effectiveTag = tag ?? (digest === undefined ? 'latest' : '');
  return effectiveTag === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultHttpGet(handler: JsonObject | undefined): void {
  const httpGet = handler && maybeChild(handler, 'httpGet');
  if (!httpGet) return;
  setDefault(httpGet, 'path', '/');
  setDefault(httpGet, 'scheme', 'HTTP');
}

function defaultProbe(container: JsonObject, key: string): void {
  const probe = maybeChild(container, key);
  if (!probe) return;
  for (const [field, value] of [
    ['timeoutSeconds', 1],
    ['periodSeconds', 10],
    ['successThreshold', 1],
    ['failureThreshold', 3],
  ] as const) {
    // Zero is "unset" for these int32 fields with omitempty.
    if (isUnset(probe[field]) || probe[field] === 0) probe[field] = value;
  }
  defaultHttpGet(probe);
  const grpc = maybeChild(probe, 'grpc');
  if (grpc && isUnset(grpc.service)) grpc.service = '';
}

/**
 * fieldRef.apiVersion: v1 (SetDefaults_ObjectFieldSelector); a resourceFieldRef's divisor is
 * a Quantity struct without omitempty, so it prints as "0" when unset.
 */
export function defaultFieldRef(holder: JsonObject | undefined): void {
  const fieldRef = holder && maybeChild(holder, 'fieldRef');
  if (fieldRef) setDefault(fieldRef, 'apiVersion', 'v1');
  const resourceRef = holder && maybeChild(holder, 'resourceFieldRef');
  if (resourceRef) {
    resourceRef.divisor = isUnset(resourceRef.divisor)
      ? '0'
      : canonicalQuantity(resourceRef.divisor as string);
  }
}

/** Quantities are rounded up to milli scale and stored canonically. */
export function defaultResourceList(list: JsonObject | undefined): void {
  if (!list) return;
  for (const [k, v] of Object.entries(list)) {
    if (typeof v === 'string' || typeof v === 'number') list[k] = canonicalQuantity(v);
  }
}

/** Defaults for one container, init container or ephemeral container. */
export function defaultContainer(container: JsonObject): void {
  setDefault(container, 'imagePullPolicy', defaultPullPolicy(container.image));
  setDefault(container, 'terminationMessagePath', '/dev/termination-log');
  setDefault(container, 'terminationMessagePolicy', 'File');
  // ResourceRequirements is a Go struct (not a pointer): it always serialises, as `{}` if empty.
  const resources = child(container, 'resources');
  defaultResourceList(maybeChild(resources, 'limits'));
  defaultResourceList(maybeChild(resources, 'requests'));
  for (const port of objectsIn(container, 'ports')) setDefault(port, 'protocol', 'TCP');
  for (const key of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    defaultProbe(container, key);
  }
  const lifecycle = maybeChild(container, 'lifecycle');
  if (lifecycle) {
    defaultHttpGet(maybeChild(lifecycle, 'postStart'));
    defaultHttpGet(maybeChild(lifecycle, 'preStop'));
  }
  for (const env of objectsIn(container, 'env')) {
    const valueFrom = env.valueFrom;
    if (isObject(valueFrom)) defaultFieldRef(valueFrom);
  }
}
