import { defineConfig } from 'vitest/config';

/**
 * The fault-injection suite (`npm run test:faults`): real pipeline processes against the
 * simulator, a private redis-server and a private Postgres cluster per file, with faults in
 * between. Within one vitest process files run one at a time: each starts several processes and
 * kills some of them. `npm run test:faults` (scripts/test-faults.mjs) runs two such processes
 * side by side, each with half the files (`--shard`): the scenarios mostly wait, and the
 * thresholds they assert leave room for a second one running beside them.
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
