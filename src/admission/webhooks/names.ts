// Validating webhook "names": rules stricter than Kubernetes' own, with its messages.
// - Workload names become Pod names, hostnames and label values, so they must be
//   DNS-1123 labels (the API server only warns for most of them).
// - Names referenced from a pod spec must satisfy the rule of the kind they name, so a
//   typo is refused at once instead of leaving a Pod stuck in ContainerCreating.
import {
  fieldErrorBody,
  podSpecReferences,
  ruleForReference,
  typeErrorBody,
  validateName,
} from '../names/index.js';
import type { AdmissionRequest } from '../review.js';
import { allow, denyInvalid, type Verdict } from '../verdict.js';
import { validatingWebhook, type Webhook } from '../webhook.js';
import { eachValueAt, podSpecOf } from './pod-specs.js';
import { isObject } from '../../json.js';

/** Kinds whose name must be a DNS-1123 label (Service's own rule, DNS-1035, is stricter still). */
export const LABEL_NAMED_KINDS = new Set([
  '/Pod',
  '/Service',
  'apps/Deployment',
  'apps/StatefulSet',
  'apps/DaemonSet',
  'apps/ReplicaSet',
  'batch/Job',
  'batch/CronJob',
]);

type Cause = { field: string; message: string };

const WORKLOADS = {
  apiGroups: ['apps'],
  apiVersions: ['v1'],
  resources: ['deployments', 'statefulsets', 'daemonsets', 'replicasets'],
};
const JOBS = { apiGroups: ['batch'], apiVersions: ['v1'], resources: ['jobs', 'cronjobs'] };

export function namesWebhook(): Webhook {
  return validatingWebhook({
    name: 'names.annex.dev',
    description:
      'Names that become hostnames and label values must be DNS-1123 labels, and names\nreferenced inside specs must satisfy the rule of the kind they name.',
    rules: [
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: [''],
        apiVersions: ['v1'],
        resources: ['pods', 'services'],
      },
      { operations: ['CREATE', 'UPDATE'], ...WORKLOADS },
      { operations: ['CREATE', 'UPDATE'], ...JOBS },
    ],
    failurePolicy: 'Fail',
    timeoutSeconds: 5,
    admit: checkNames,
  });
}

export function checkNames(req: AdmissionRequest): Verdict {
  const obj = req.object;
  if (!obj || (req.operation !== 'CREATE' && req.operation !== 'UPDATE')) return allow();
  const { group, kind } = req.kind;
  const { name, typeError } = objectName(req);
  const causes: Cause[] = [];
  // A name cannot change after creation: checking it on UPDATE would only lock old objects.
  if (req.operation === 'CREATE' && LABEL_NAMED_KINDS.has(`${group}/${kind}`)) {
    // Quoted once: a 6.5 MiB name is repeated in every cause, as the API server does.
    const details = typeError ? [] : validateName('dns1123-label', name);
    if (typeError) causes.push(typeError);
    const shown = details.length ? fieldErrorBody('Invalid value', name) : '';
    for (const detail of details) {
      causes.push({ field: 'metadata.name', message: `${shown}: ${detail}` });
    }
  }
  const at = podSpecOf(obj, group, kind);
  if (at) {
    for (const ref of podSpecReferences) {
      eachValueAt(at.spec, at.path, ref.path, (value, field) => {
        // Only a string can name an object; the schema refuses other types before it matters.
        if (typeof value !== 'string' || value === '') return;
        for (const detail of validateName(ruleForReference(ref), value)) {
          causes.push({ field: field(), message: fieldErrorBody('Invalid value', value, detail) });
        }
      });
    }
  }
  return causes.length ? denyInvalid(req, name, causes) : allow();
}

/**
 * The name to judge: request.name (validating webhooks see the generated name there,
 * generateName being resolved by then), else metadata.name; a metadata or name of the
 * wrong type gives no name and the cause that says so.
 */
function objectName(req: AdmissionRequest): { name: string; typeError?: Cause } {
  if (req.name) return { name: req.name };
  const meta: unknown = req.object?.metadata;
  if (meta === undefined || meta === null) return { name: '' };
  if (!isObject(meta)) {
    return {
      name: '',
      typeError: { field: 'metadata', message: typeErrorBody('metadata', meta, 'object') },
    };
  }
  const name = meta.name;
  if (name === undefined || name === null || typeof name === 'string') return { name: name ?? '' };
  return {
    name: '',
    typeError: { field: 'metadata.name', message: typeErrorBody('metadata.name', name, 'string') },
  };
}
