import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // the fault suite runs on its own (`npm run test:faults`, vitest.faults.config.ts)
    exclude: ['**/node_modules/**', 'test/faults/**'],
    // Each file isolates itself (own simulator port, database, queue prefix), so files run in
    // parallel in separate processes; tests inside a file run in order, but none relies on it
    // (each sets up what it needs: checked with --sequence.shuffle). The files wait on Postgres,
    // Redis, the simulator and the processes they start more than they compute, so two run at
    // once even on two cores (vitest's default there is one).
    pool: 'forks',
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
