import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // the fault suite runs on its own (`npm run test:faults`, vitest.faults.config.ts)
    exclude: ['**/node_modules/**', 'test/faults/**'],
    // Each file isolates itself (own simulator port, database, queue prefix), so files may run in
    // parallel in separate processes (vitest's default on two cores is one at a time); tests
    // inside a file run in order, but none relies on it
    // (each sets up what it needs: checked with --sequence.shuffle).
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
