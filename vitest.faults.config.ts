import { defineConfig } from 'vitest/config';

/**
 * The fault-injection suite (`npm run test:faults`): real pipeline processes against the
 * simulator, a private redis-server and a private Postgres cluster per file, with faults in
 * between. Within one vitest process files run one at a time: each starts several processes and
 * kills some of them. `npm run test:faults` starts two such processes side by side, the files
 * dealt between them by measured duration (scripts/test-faults.mjs): a scenario mostly waits on
 * its outages and timers, and the figures it checks (resume, shutdown, lost, paid twice) hold
 * with the other lane, or a benchmark, sharing the machine. FAULTS_SHARDS=1 runs them all in one.
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
