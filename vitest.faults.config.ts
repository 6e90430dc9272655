import { defineConfig } from 'vitest/config';

/**
 * The fault-injection suite (`npm run test:faults`): real pipeline processes against the
 * simulator, a private redis-server and a private Postgres cluster per file, with faults in
 * between. Files run one at a time: each starts several processes and kills some of them, and
 * timings (resume, shutdown) are only meaningful when the machine is not also running the rest.
 * (`FAULTS_SHARDS=2 npm run test:faults` runs two halves side by side: faster, but timings then
 * share the machine; scripts/test-faults.mjs.)
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 240_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
