/**
 * Commands started while Postgres or Redis is down: one line on stderr naming the setting that
 * points at the service that refused (its password hidden), the contract's exit code, and a
 * daemon still waiting for Redis that stops when asked.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCleanError } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/pipeline.ts';
import { parseLogLines, startCli, waitUntil } from '../helpers/proc.ts';

/** A port nothing listens on (bound once, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let database: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  database = await createTestDatabase('services-down');
  env = {
    DATABASE_URL: database.url,
    REDIS_URL: 'redis://127.0.0.1:6379',
    // never reached: the commands stop at the service that is down
    API_BASE_URL: 'http://127.0.0.1:9/v1',
    API_KEY: 'k-unused',
    QUEUE_PREFIX: '{vsi-test-services-down}',
    LOG_LEVEL: 'warn',
    SHUTDOWN_GRACE_MS: '3000',
  };
});
afterAll(async () => {
  await database?.drop();
});

describe('a service that refuses is named', () => {
  it('Postgres refused: exit 1, one line naming DATABASE_URL (password hidden) and host:port', async () => {
    const port = await closedPort();
    const url = `postgres://ingest:s3cret@127.0.0.1:${port}/corpus`;
    const r = await runCli(['status'], { ...env, DATABASE_URL: url }, 60_000);
    expectCleanError(
      r,
      1,
      `error: cannot connect to Postgres at 127.0.0.1:${port} (DATABASE_URL=postgres://ingest:***@127.0.0.1:${port}/corpus)`,
    );
    expect(r.stderr).not.toContain('REDIS_URL');
    expect(r.stderr).not.toContain('s3cret');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('Redis down: backfill exits 1 with one line naming REDIS_URL and host:port, no reconnect warnings', async () => {
    const port = await closedPort();
    const r = await runCli(['backfill', '--all'], { ...env, REDIS_URL: `redis://:s3cret@127.0.0.1:${port}` }, 60_000);
    expectCleanError(
      r,
      1,
      new RegExp(`^error: Redis is not reachable at REDIS_URL 127\\.0\\.0\\.1:${port}: no connection within 5000 ms`),
    );
    expect(r.stderr).not.toContain('s3cret');
    // it used to print a redis.error warning per reconnect attempt before the error
    expect(parseLogLines(r.stderr)).toEqual([]);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('a daemon started while Redis is down', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`stops promptly on ${signal} (exit 0)`, async () => {
      const port = await closedPort();
      const daemon = startCli(['daemon'], { ...env, LOG_LEVEL: 'info', REDIS_URL: `redis://127.0.0.1:${port}` });
      try {
        await daemon.waitForLog((l) => l.event === 'daemon.waiting_for_redis', 60_000, 'waiting for Redis');
        daemon.kill(signal);
        const sentAt = Date.now();
        // it used to stay alive (still waiting on Redis ten minutes later)
        const exit = await waitUntil(
          async () => (daemon.running() ? undefined : await daemon.exited),
          15_000,
          `the daemon to exit after ${signal}`,
        );
        expect(exit).toEqual({ code: 0, signal: null });
        expect(Date.now() - sentAt).toBeLessThan(15_000);
        expect(daemon.logs().some((l) => l.event === 'daemon.stopped')).toBe(true);
      } finally {
        daemon.kill('SIGKILL');
        await daemon.exited;
      }
    });
  }
});
