// Three projects: `unit` (pure logic, beside the code), `cluster` (end-to-end against a
// real kube-apiserver + etcd started once per run by test/cluster/global-setup.ts) and
// `node` (a real containerd + kubelet per file, annex's image installed on it: test/node/).
// sequence.groupOrder runs them one project after the other, unit first: on 2 cores the
// cluster files and the node files (each a control plane, the node's a kubelet too) must
// never run at the same time, and within each of those two projects one file at a time.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The examples import the public API as a user does (`from 'annex'`): in tests, the source.
const annex = fileURLToPath(new URL('./src/index.ts', import.meta.url));

export default defineConfig({
  test: {
    // The JSON report lets .ci/run print one closing "N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: '.annex/test-results.json' }]],
    projects: [
      {
        resolve: { alias: { annex } },
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: ['src/**/*.test.ts', 'test/unit/**/*.test.ts'],
          testTimeout: 20_000,
        },
      },
      {
        resolve: { alias: { annex } },
        test: {
          name: 'cluster',
          sequence: { groupOrder: 1 },
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/cluster/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // One control plane serves every file; files run one at a time so that
          // cluster-wide objects (APIServices, webhooks) never race each other.
          fileParallelism: false,
        },
      },
      {
        resolve: { alias: { annex } },
        test: {
          name: 'node',
          sequence: { groupOrder: 2 },
          include: ['test/node/**/*.test.ts'],
          // Builds or reuses the node and annex's image (cold: minutes; docs/testing.md).
          globalSetup: ['test/node/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
