// Two projects: `unit` (pure logic, beside the code) and `cluster` (end-to-end against a
// real kube-apiserver + etcd started once per run by test/cluster/global-setup.ts).
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
          include: ['src/**/*.test.ts', 'test/unit/**/*.test.ts'],
          testTimeout: 20_000,
        },
      },
      {
        resolve: { alias: { annex } },
        test: {
          name: 'cluster',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/cluster/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // One control plane serves every file; files run one at a time so that
          // cluster-wide objects (APIServices, webhooks) never race each other.
          fileParallelism: false,
        },
      },
    ],
  },
});
