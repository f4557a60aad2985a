// Defaults for the other core kinds (pkg/apis/core/v1/defaults.go).
import { defaultSecretData } from './kinds.js';
import { defaultPvcSpec } from './volumes.js';
import { child, isUnset, objectsIn, setDefault } from './util.js';
import type { JsonObject } from './util.js';

export function defaultService(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  setDefault(spec, 'sessionAffinity', 'None');
  if (spec.sessionAffinity === 'None') {
    delete spec.sessionAffinityConfig;
  } else if (spec.sessionAffinity === 'ClientIP') {
    const clientIP = child(child(spec, 'sessionAffinityConfig'), 'clientIP');
    setDefault(clientIP, 'timeoutSeconds', 10800);
  }
  setDefault(spec, 'type', 'ClusterIP');
  for (const port of objectsIn(spec, 'ports')) {
    setDefault(port, 'protocol', 'TCP');
    if (isUnset(port.targetPort) || port.targetPort === 0) port.targetPort = port.port ?? 0;
  }
  const type = spec.type;
  if (type === 'NodePort' || type === 'LoadBalancer') {
    setDefault(spec, 'externalTrafficPolicy', 'Cluster');
  }
  if (type === 'ClusterIP' || type === 'NodePort' || type === 'LoadBalancer') {
    setDefault(spec, 'internalTrafficPolicy', 'Cluster');
  }
  if (type === 'LoadBalancer') setDefault(spec, 'allocateLoadBalancerNodePorts', true);
}

export function defaultSecret(obj: JsonObject): void {
  setDefault(obj, 'type', 'Opaque');
  defaultSecretData(obj);
}

export function defaultNamespace(obj: JsonObject): void {
  const meta = child(obj, 'metadata');
  if (typeof meta.name === 'string' && meta.name !== '') {
    child(meta, 'labels')['kubernetes.io/metadata.name'] = meta.name;
  }
}

export function defaultPersistentVolume(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  setDefault(spec, 'persistentVolumeReclaimPolicy', 'Retain');
  setDefault(spec, 'volumeMode', 'Filesystem');
  setDefault(child(obj, 'status'), 'phase', 'Pending');
}

export function defaultPersistentVolumeClaim(obj: JsonObject): void {
  defaultPvcSpec(child(obj, 'spec'));
  setDefault(child(obj, 'status'), 'phase', 'Pending');
}
