// The one `kubectl wait --for=condition` helper (src/devcluster/wait.ts) against the real
// kubectl: it must outlast the two states in which kubectl's own wait fails at once — the
// object not created yet, and created without conditions yet (a new CRD's status.conditions
// is null; here a custom resource holds that state for as long as the test needs).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitForCondition as waitWith } from '../../src/devcluster/wait.js';
import type { Kubectl } from '../../src/devcluster/wire.js';
import { applyObjects } from '../cluster/annex.js';
import { until } from '../cluster/direct.js';
import { describeCluster, kubectl, kubectlOk, waitForCondition } from '../cluster/harness.js';

const GROUP = 'wait.annex.dev';
const CRD = `probes.${GROUP}`;

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: CRD },
  spec: {
    group: GROUP,
    scope: 'Cluster',
    names: { plural: 'probes', singular: 'probe', kind: 'Probe' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        // No status subresource: the test writes status with the object.
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              status: {
                type: 'object',
                properties: {
                  conditions: {
                    type: 'array',
                    nullable: true,
                    items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

/** Created, not applied: client-side apply would drop the null. */
const createProbe = (name: string, conditions: object[] | null) =>
  kubectlOk(['create', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: `${GROUP}/v1`,
      kind: 'Probe',
      metadata: { name },
      status: { conditions },
    }),
  });

describeCluster('waitForCondition: the tolerant kubectl wait', () => {
  beforeAll(async () => {
    await applyObjects([crd]);
    await waitForCondition([`crd/${CRD}`], 'Established');
  });

  afterAll(async () => {
    await kubectl(['delete', 'crd', CRD, '--wait=false']);
  });

  it("kubectl's own wait fails at once on an object without conditions", async () => {
    await createProbe('bare', null);
    const r = await kubectl(['wait', '--for=condition=Ready', 'probe/bare', '--timeout=30s']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('.status.conditions accessor error: <nil> is of the type <nil>');
  });

  it('outlasts a missing object, then one without conditions, until the condition holds', async () => {
    const failures: string[] = [];
    const run: Kubectl = async (args) => {
      const r = await kubectl(args);
      if (r.code !== 0) {
        failures.push(r.stderr);
        throw new Error(r.stderr);
      }
      return r.stdout;
    };
    const waited = waitWith(run, ['probe/late'], 'Ready', 120_000);
    // Each state is changed only once the helper has met (and outlasted) the one before.
    await until('a NotFound attempt', async () => failures.some((f) => f.includes('NotFound')));
    await createProbe('late', null);
    await until('an attempt on null conditions', async () =>
      failures.some((f) => f.includes('accessor error')),
    );
    await kubectlOk([
      'patch',
      'probe',
      'late',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { conditions: [{ type: 'Ready', status: 'True' }] } }),
    ]);
    expect(await waited).toMatch(/^probe\.wait\.annex\.dev\/late condition met$/m);
  });

  it('gives up at its deadline with kubectl’s last answer', async () => {
    await createProbe('never', [{ type: 'Ready', status: 'False' }]);
    await expect(waitForCondition(['probe/never'], 'Ready', { timeoutMs: 2_000 })).rejects.toThrow(
      /^probe\/never: condition Ready not met within 2000 ms \(.*timed out waiting for the condition/s,
    );
  });
});
