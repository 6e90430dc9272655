/**
 * Scenario 16: bad input everywhere. Every command with a missing, malformed or out-of-range
 * argument, and every environment variable malformed (the list comes from the configuration
 * itself, so a new variable without a case here fails this test): exit code 2, a message that
 * names the field, no stack trace. Each case is a real process.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ENV_VARIABLES } from '../../src/config.ts';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';

interface Case {
  args: string[];
  env?: Record<string, string>;
  /** what the message must name */
  names: RegExp;
}

const ARG_CASES: Case[] = [
  { args: ['no-such-command'], names: /unknown command 'no-such-command'/ },
  { args: ['sources', 'add'], names: /missing required argument 'kind'/ },
  { args: ['sources', 'add', 'channel'], names: /missing required argument 'id-or-url'/ },
  { args: ['sources', 'add', 'video', 'abc'], names: /'video' is invalid for argument 'kind'/ },
  { args: ['sources', 'add', 'channel', '@good', '--limit', '0'], names: /--limit/ },
  { args: ['sources', 'add', 'channel', '@good', '--limit', '1.5'], names: /--limit/ },
  { args: ['sources', 'add', 'channel', '@good', '--lang', '12'], names: /--lang/ },
  { args: ['sources', 'add', 'channel', '@good', '--cron', 'every day'], names: /--cron/ },
  { args: ['sources', 'add', 'playlist', 'no playlist here!'], names: /id-or-url/ },
  { args: ['sources', 'remove'], names: /missing required argument 'id\|ref'/ },
  { args: ['sources', 'remove', 'abc'], names: /no source is "abc".*sources list/ },
  { args: ['sources', 'pause', '0'], names: /source 0 does not exist/ },
  { args: ['sources', 'edit', '1'], names: /nothing to change/ },
  { args: ['sources', 'edit', '1', '--cron', '0 3 * *'], names: /--cron.*has 4 fields/ },
  { args: ['sources', 'add', 'channel', '@good', '--cron', '*/10 * * * * *'], names: /--cron.*has 6 fields/ },
  { args: ['daemon', '--role', 'cook'], names: /--role.*"cook" is not a role/s },
  { args: ['daemon', '--admin-port', '70000'], names: /--admin-port/ },
  { args: ['backfill'], names: /--source.*--all/ },
  { args: ['backfill', '--source', 'abc'], names: /--source/ },
  { args: ['backfill', '--source', '0'], names: /--source/ },
  { args: ['backfill', '--source', '1', '--all'], names: /--source.*--all/ },
  { args: ['backfill', '--all', '--timeout', '5x'], names: /--timeout/ },
  { args: ['replay'], names: /--batch.*--failed.*--expired/ },
  { args: ['replay', '--failed', '--expired'], names: /exactly one/ },
  { args: ['replay', '--batch'], names: /--batch/ },
  { args: ['replay', '--failed', '--since', 'yesterday'], names: /--since/ },
  { args: ['replay', '--batch', 'job-1', '--yes'], names: /--yes/ },
  { args: ['status', '--bogus'], names: /unknown option '--bogus'/ },
  { args: ['simulator', '--port', '99999'], names: /--port/ },
  { args: ['simulator', '--error-rate', '2'], names: /--error-rate/ },
  { args: ['simulator', '--clock-speed', 'fast'], names: /--clock-speed/ },
  { args: ['search'], names: /missing required argument 'words'/ },
  { args: ['search', 'hello', '--limit', '0'], names: /--limit/ },
  { args: ['search', 'hello', '--lang', 'english'], names: /--lang.*"english"/ },
  { args: ['search', 'hello', '--source', 'abc'], names: /--source/ },
];

/** A malformed value for each variable (numbers without one here get a word). */
const BAD_VALUES: Record<string, string[]> = {
  API_BASE_URL: ['http://example.com/v2'],
  API_KEY: ['key with\nnewline'],
  API_PLATFORM: ['Video Site'],
  DATABASE_URL: ['mysql://localhost/db'],
  REDIS_URL: ['http://localhost:6379'],
  QUEUE_PREFIX: ['has space', 'vsi', '{}vsi'],
  REDIS_CLUSTER_NODES: ['redis-1', 'redis-1:6379,,redis-2:6379', 'redis://:secret@redis-1:port'],
  REDIS_PASSWORD: ['pass\nword'],
  LOG_LEVEL: ['loud'],
  LOG_FORMAT: ['yaml'],
  SIMULATOR_API_KEY: ['key with\ttab'],
  OTEL_EXPORTER_OTLP_ENDPOINT: ['collector:4318'],
  OTEL_SERVICE_NAME: ['has space'],
  OTEL_EXPORTER_OTLP_HEADERS: ['api-key=s3cr\tet'],
  ADMIN_TOKEN: ['short'],
  METRICS_TOKEN: ['short'],
  ADMIN_ALLOWED_HOSTS: ['https://admin.example.com', 'admin.example.com:8443'],
  API_RETRY_MAX_ATTEMPTS: ['21'],
  API_RATE_PER_SECOND: ['0'],
  BATCH_SIZE: ['5001'],
  SHUTDOWN_GRACE_MS: ['-1'],
  JOB_LOCK_DURATION_MS: ['10'],
  POLL_CONCURRENCY: ['1e3'],
  RAW_RETENTION_DAYS: ['-1', '90d'],
  HISTORY_RETENTION_DAYS: ['half a year'],
  EVENTS_RETENTION_DAYS: ['30 days'],
  CREDIT_BUDGET_PER_DAY: ['0'],
  SOURCE_MIN_INTERVAL_MS: ['90000000', '5m'],
  VIDEO_URL_TEMPLATE: ['https://videos.example/watch?t={seconds}', 'ftp://videos.example/{id}'],
  DATABASE_PREPARE: ['no'],
  MIGRATION_LOCK_TIMEOUT_MS: ['50'],
  MIGRATION_LOCK_RETRIES: ['101'],
  WEBHOOK_SECRETS_KEY: ['too-short', '0123456789abcdef'.repeat(3)],
  PASSAGE_TOKENS: ['abc', '0'],
  PASSAGE_OVERLAP_TOKENS: ['abc', '256'],
  EMBEDDINGS_BASE_URL: ['api.openai.com/v1', 'ftp://embeddings.example/v1'],
  EMBEDDINGS_MODEL: ['two words'],
  EMBEDDINGS_DIMENSIONS: ['abc', '0', '4001'],
  EMBEDDINGS_API_KEY: ['sk-with\nnewline'],
  EMBEDDINGS_TOKENS_PER_DAY: ['0', '1e6'],
  EMBEDDINGS_BATCH_SIZE: ['0', '2049'],
  EMBEDDINGS_TIMEOUT_MS: ['50', 'abc'],
  EMBEDDINGS_CONCURRENCY: ['0', '33', 'abc'],
};
const NUMERIC = /(_MS|_ATTEMPTS|_PER_SECOND|_BURST|_SIZE|_RESERVE|_ITEMS|_CONCURRENCY|_BYTES|_MAX)$/;

function envCases(): Case[] {
  const cases: Case[] = [];
  for (const v of ENV_VARIABLES) {
    const values = BAD_VALUES[v] ?? (NUMERIC.test(v) ? ['abc'] : []);
    if (values.length === 0) throw new Error(`no malformed value known for ${v}: add one to BAD_VALUES`);
    for (const value of values)
      cases.push({ args: ['status'], env: { [v]: value }, names: new RegExp(`^error: ${v}: `, 'm') });
  }
  return cases;
}

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('16-bad-input');
  await rig.migrate();
});
afterAll(async () => {
  await rig?.close();
});

/** Run cases a few at a time (each is a process start). */
async function runAll(cases: Case[], parallel = 4) {
  const results: { c: Case; code: number | null; stderr: string; stdout: string }[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (;;) {
        const c = cases[next++];
        if (!c) return;
        const r = await rig.run(c.args, c.env ?? {}, 60_000);
        results.push({ c, code: r.code, stderr: r.stderr, stdout: r.stdout });
      }
    }),
  );
  return results;
}

const STACK_FRAME = /^\s+at .+(:\d+:\d+\)?|\(native\))$/m;

it('16 bad input everywhere: exit 2, a message naming the field, no stack trace', async () => {
  const cases = [...ARG_CASES, ...envCases()];
  const results = await runAll(cases);
  const bad = results
    .filter((r) => r.code !== 2 || !r.c.names.test(r.stderr) || STACK_FRAME.test(r.stderr) || r.stdout !== '')
    .map((r) => ({
      args: r.c.args.join(' '),
      env: r.c.env,
      code: r.code,
      stderr: r.stderr.slice(0, 600),
      stdout: r.stdout.slice(0, 200),
    }));
  figures('16 bad-input', {
    arg_cases: ARG_CASES.length,
    env_cases: cases.length - ARG_CASES.length,
    variables: ENV_VARIABLES.length,
    wrong: bad.length,
  });
  expect(bad).toEqual([]);
  // about 100 process starts, CPU-bound: 106 s on a quiet machine, over the suite's 240 s with
  // load 10-12 on the 2 cores; each start has its own 60 s limit, so a hang still fails it
}, 900_000);
