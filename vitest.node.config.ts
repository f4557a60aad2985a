// The node suite (issue 22): a real containerd + kubelet in namespaces the test creates
// (test/cluster/node.ts). Opt in with `npm run test:node`; `npm test` (vitest.config.ts)
// does not include test/node/.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const annex = fileURLToPath(new URL('./src/index.ts', import.meta.url));

export default defineConfig({
  resolve: { alias: { annex } },
  test: {
    name: 'node',
    include: ['test/node/**/*.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 600_000,
    fileParallelism: false,
  },
});
