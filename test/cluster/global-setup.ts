// vitest global setup for the `cluster` project: one real control plane per test run.
// Tests read it with `inject('cluster')` (see ./harness.ts).
import type { TestProject } from 'vitest/node';
import { ControlPlane, type ClusterInfo } from './control-plane.js';
import { ensureBinaries, pinnedVersions } from '../../src/devcluster/binaries.js';

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: ClusterInfo | null;
    clusterSkipReason: string;
  }
}

export default async function setup(project: TestProject) {
  // annex honours $KUBECONFIG, as kubectl does: the developer's own cluster must never
  // reach an annex a test starts (the workers inherit this environment).
  delete process.env.KUBECONFIG;
  const required = process.env.ANNEX_REQUIRE_CLUSTER === '1';
  const bins = ensureBinaries();
  if ('missing' in bins) {
    const why = `${bins.missing}. Install Go >= 1.26 to run them (the first build takes minutes and is cached in ~/.cache/annex/k8s).`;
    if (required)
      throw new Error(`ANNEX_REQUIRE_CLUSTER=1 but the control plane cannot start: ${why}`);
    console.error(`annex: skipping the real-cluster tests: ${why}`);
    project.provide('cluster', null);
    project.provide('clusterSkipReason', why);
    return;
  }
  const cp = new ControlPlane(bins.binDir, pinnedVersions().kubernetes);
  const onSignal = (sig: NodeJS.Signals) => {
    void cp.stop().finally(() => process.kill(process.pid, sig));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    project.provide('cluster', await cp.start((l) => console.error(`annex: ${l}`)));
  } catch (e) {
    await cp.stop();
    throw e;
  }
  project.provide('clusterSkipReason', '');
  return async () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await cp.stop();
  };
}
