// The split of the live feature, without an API server: the controller loads the policies
// into the shared state and declares the webhooks' rules; the webhooks answer from that
// state alone and record only the API server's (authenticated) reviews.
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { AdmissionRequest } from '../admission/review.js';
import { WorkQueue } from '../kube/workqueue.js';
import { PolicyController } from './controller.js';
import { unionRules } from './engine.js';
import { policyState } from './state.js';
import { policyWebhooks, POLICY_WEBHOOK } from './webhooks.js';

const directory = join(import.meta.dirname, '..', '..', 'policies');

const hostNetworkDeployment: AdmissionRequest = {
  uid: 'u',
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  namespace: 'shop',
  name: 'web',
  operation: 'CREATE',
  object: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { template: { spec: { hostNetwork: true, containers: [{ name: 'c', image: 'x' }] } } },
  },
};

function started() {
  const state = policyState();
  const record = vi.fn();
  const webhooks = policyWebhooks(state, { annexNamespace: 'annex', record });
  const controller = new PolicyController(state, {
    native: true,
    directory,
    annexNamespace: 'annex',
    servingCert: () => '',
  });
  const registrationsChanged = vi.fn();
  controller.start({
    kube: null,
    log: pino({ level: 'silent' }),
    queue: new WorkQueue(),
    registrationsChanged,
    config: undefined,
    events: { record: () => {} },
  });
  return { state, record, webhooks, controller, registrationsChanged };
}

const review = (authenticated: boolean) => ({
  signal: new AbortController().signal,
  deadline: performance.now() + 5_000,
  authenticated,
});

describe('the policy controller and webhooks, without an API server', () => {
  it('loads the directory, keeps every policy on the webhook and declares their rules', () => {
    const { state, webhooks, controller, registrationsChanged } = started();
    expect(controller.ready()).toBe(true);
    expect(state.onWebhook.map((p) => p.name)).toEqual(state.set.policies.map((p) => p.name));
    expect(state.onWebhook.length).toBeGreaterThan(0);
    const rules = unionRules(state.onWebhook.flatMap((p) => p.rules));
    for (const w of [webhooks.validating, webhooks.mutating]) {
      expect(w.registrations[0]!.name).toBe(POLICY_WEBHOOK);
      expect(w.registrations[0]!.rules).toEqual(rules);
    }
    expect(registrationsChanged).toHaveBeenCalledTimes(1);
  });

  it('answers from the shared state and records only authenticated reviews', async () => {
    const { webhooks, record } = started();
    await webhooks.validating.admit(hostNetworkDeployment, review(false));
    expect(record).not.toHaveBeenCalled();
    await webhooks.validating.admit(hostNetworkDeployment, review(true));
    expect(record).toHaveBeenCalledTimes(1);
    const decisions = record.mock.calls[0]![0] as { policy: string; action: string }[];
    expect(decisions).toContainEqual(
      expect.objectContaining({ policy: 'host-network', action: 'Audit' }),
    );
  });

  it('refuses an AdmissionPolicy that does not compile', async () => {
    const { webhooks } = started();
    const bad = {
      ...hostNetworkDeployment,
      kind: { group: 'policy.annex.dev', version: 'v1alpha1', kind: 'AdmissionPolicy' },
      resource: { group: 'policy.annex.dev', version: 'v1alpha1', resource: 'admissionpolicies' },
      namespace: '',
      object: {
        apiVersion: 'policy.annex.dev/v1alpha1',
        kind: 'AdmissionPolicy',
        metadata: { name: 'bad' },
        spec: { validate: [{ name: 'r', path: '$[', schema: {} }] },
      },
    };
    const v = await webhooks.check.admit(bad, review(true));
    expect(v).toMatchObject({ allowed: false, status: { code: 422 } });
  });
});
