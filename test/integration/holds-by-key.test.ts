/**
 * Holds say which key they are about (issue 13, point 3). Real `daemon` and `backfill`
 * processes against the in-process simulator, which answers 401 to any key it has no account for:
 * a mistyped key's backfill holds that key only, and the daemon with the right key goes on with
 * its cron; a daemon started with a refused key says so at once, in its log and on /readyz; a
 * scheduled sync skipped by a hold leaves a `held` run at every tick and one warning per source
 * and hold; `vsi_upstream_hold{code}` follows the hold. Assertions are on Postgres rows, log
 * events, the admin server's answers and the simulator's request counts.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { keyFingerprint } from '../../src/api/key-fingerprint.ts';
import { clearHolds, holdsForKey, setHold } from '../../src/db/upstream-holds.ts';
import { BATCH_IN_FLIGHT_STATUSES } from '../../src/domain/batches.ts';
import { HOLD_CODES } from '../../src/domain/refusals.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { parseMetrics, value } from '../helpers/admin.ts';
import { createPipelineHarness, runCli, type PipelineHarness } from '../helpers/pipeline.ts';
import { freePort, startCli, waitUntil, type CliProcess } from '../helpers/proc.ts';

/** Six fields: a tick every second (BullMQ's cron parser takes seconds; the CLI would refuse it). */
const EVERY_SECOND = '* * * * * *';
const CHANNEL_SIZE = 12;
const WAIT_MS = 30_000;

let h: PipelineHarness;
let procs: CliProcess[] = [];

beforeEach(async () => {
  h = await createPipelineHarness('holds-by-key', {
    catalog: { channels: 2, channelSizes: [CHANNEL_SIZE, CHANNEL_SIZE], privateShare: 0, goneShare: 0 },
  });
});

afterEach(async () => {
  for (const p of procs) p.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
  procs = [];
  await h?.close();
});

/** A key the simulator has no account for: every request with it is answered 401. */
function unknownKey(): string {
  return `vsi-test-unknown-key-${randomBytes(12).toString('hex')}`;
}

async function addSource(channel: number): Promise<number> {
  const ch = h.sim.catalog.channels()[channel]!;
  const s = await registerSource(h.deps, {
    kind: 'channel',
    ref: ch.id,
    limit: 100,
    langs: [],
    textOnly: false,
    cron: EVERY_SECOND,
  });
  return s.id;
}

async function startDaemon(env: Record<string, string> = {}, adminPort?: number): Promise<CliProcess> {
  const args = [
    'daemon',
    '--role',
    'scheduler,poller,sink',
    ...(adminPort === undefined ? [] : ['--admin-port', String(adminPort)]),
  ];
  const d = startCli(args, { ...h.env, LOG_LEVEL: 'info', ...env }, 'daemon');
  procs.push(d);
  return d;
}

async function storedVideos(): Promise<number> {
  const [r] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from videos`;
  return r!.n;
}

async function holdRows(): Promise<{ code: string; key_fingerprint: string | null }[]> {
  return h.database.sql<
    { code: string; key_fingerprint: string | null }[]
  >`select code, key_fingerprint from upstream_holds order by code, key_fingerprint`;
}

async function admin(port: number, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, text: await res.text() };
}

/** `vsi_upstream_hold` per code, as this daemon reports it. */
async function holdGauge(port: number): Promise<Record<string, number | undefined>> {
  const all = parseMetrics((await admin(port, '/metrics')).text);
  return Object.fromEntries(HOLD_CODES.map((code) => [code, value(all, 'vsi_upstream_hold', { code })]));
}

/** Every row of every table of the test database, as text. */
async function everyRow(): Promise<string> {
  const sql = h.database.sql;
  const tables = await sql<
    { name: string }[]
  >`select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`;
  let text = '';
  for (const t of tables) {
    const [r] = await sql<{ rows: string | null }[]>`select string_agg(t::text, E'\n') as rows from ${sql(t.name)} t`;
    text += r!.rows ?? '';
  }
  return text;
}

/** Every key and value under the test's queue prefix, as text. */
async function everyRedisValue(redis: Redis, prefix: string): Promise<string> {
  const parts: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      parts.push(key);
      const type = await redis.type(key);
      if (type === 'string') parts.push((await redis.get(key)) ?? '');
      else if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(key)));
      else if (type === 'list') parts.push(...(await redis.lrange(key, 0, -1)));
      else if (type === 'set') parts.push(...(await redis.smembers(key)));
      else if (type === 'zset') parts.push(...(await redis.zrange(key, 0, -1)));
      else if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(key, '-', '+')));
    }
  } while (cursor !== '0');
  return parts.join('\n');
}

it('a wrong key is refused (exit 3) and held alone: the daemon with the right key keeps syncing on its cron', async () => {
  const sourceId = await addSource(0);
  const port = await freePort();
  const daemon = await startDaemon({}, port);
  await waitUntil(
    async () => ((await storedVideos()) === CHANNEL_SIZE ? true : undefined),
    WAIT_MS,
    'the first scheduled sync to land',
  );
  // and its batches to end: rows are stored before their batch is marked completed, and a sync
  // finding every kind still in flight makes no API call (the wrong key would not be tried)
  await waitUntil(
    async () => {
      const [r] = await h.database.sql<{ n: number }[]>`
      select count(*)::int as n from batches where source_id = ${sourceId} and status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])`;
      return r!.n === 0 ? true : undefined;
    },
    WAIT_MS,
    "the first scheduled sync's batches to end",
  );

  const wrong = unknownKey();
  // the daemon's cron sync of the source may hold its lease at that moment (a busy machine makes
  // that likelier): the backfill then syncs nothing and says so; it is run again until it syncs
  let backfill = await runCli(
    ['backfill', '--source', String(sourceId), '--timeout', '30s'],
    { ...h.env, API_KEY: wrong, LOG_LEVEL: 'info' },
    60_000,
  );
  for (
    let tries = 1;
    tries < 10 && backfill.code === 0 && backfill.stdout.includes('another process is syncing this source');
    tries++
  ) {
    backfill = await runCli(
      ['backfill', '--source', String(sourceId), '--timeout', '30s'],
      { ...h.env, API_KEY: wrong, LOG_LEVEL: 'info' },
      60_000,
    );
  }
  expect(backfill.code, `${backfill.stdout}\n${backfill.stderr}`).toBe(3);
  const refusedAt = new Date();

  // the hold names the wrong key (by fingerprint) and nothing else
  const right = keyFingerprint(h.sim.apiKey);
  expect(keyFingerprint(wrong)).not.toBe(right);
  expect(await holdRows()).toEqual([{ code: 'unauthorized', key_fingerprint: keyFingerprint(wrong) }]);

  // the daemon with the right key is not held: its cron syncs, and new videos land
  const added = h.sim.catalog.addVideos(h.sim.catalog.channels()[0]!.id, 3)!;
  await waitUntil(
    async () => ((await storedVideos()) === CHANNEL_SIZE + added.length ? true : undefined),
    WAIT_MS,
    'the next scheduled sync to land the new videos',
  );
  await waitUntil(
    async () => {
      const [r] = await h.database.sql<{ n: number }[]>`
      select count(*)::int as n from sync_runs where source_id = ${sourceId} and started_at > ${refusedAt} and outcome in ('up-to-date', 'submitted')`;
      return r!.n >= 2 ? true : undefined;
    },
    WAIT_MS,
    'two more scheduled syncs',
  );
  const runs = await h.database.sql<
    { outcome: string }[]
  >`select outcome from sync_runs where source_id = ${sourceId} and started_at > ${refusedAt}`;
  expect(runs.filter((r) => r.outcome === 'held' || r.outcome === 'refused-upstream')).toEqual([]);
  expect(daemon.logs().filter((l) => l.event === 'sync.held' || l.event === 'hold.set')).toEqual([]);
  // and its admin server says so
  const ready = await admin(port, '/readyz');
  expect(ready.status, ready.text).toBe(200);
  expect(JSON.parse(ready.text)).toMatchObject({ ready: true, checks: { upstream: 'ok' } });
  expect(await holdGauge(port)).toEqual({ unauthorized: 0, 'upgrade-required': 0, credits: 0 });
  // the wrong key's hold still stands, for that key
  expect(await holdRows()).toEqual([{ code: 'unauthorized', key_fingerprint: keyFingerprint(wrong) }]);

  // the key itself is in no row, log line, output or Redis value; its fingerprint is (so the scan reads what was stored)
  const rows = await everyRow();
  expect(rows).toContain(keyFingerprint(wrong));
  const redisText = await everyRedisValue(h.redis, h.prefix);
  expect(redisText.length).toBeGreaterThan(0);
  for (const [where, text] of [
    ['postgres', rows],
    ['redis', redisText],
    ['backfill output', backfill.stdout + backfill.stderr],
    ['daemon output', daemon.stdout() + daemon.stderr()],
    ['admin', (await admin(port, '/readyz')).text + (await admin(port, '/metrics')).text],
  ] as const) {
    expect(text.includes(wrong), `the wrong key in ${where}`).toBe(false);
    expect(text.includes(h.sim.apiKey), `the right key in ${where}`).toBe(false);
  }
});

it('a daemon started with a refused key says so at once, holds its key, and /readyz and the gauge follow the hold', async () => {
  const key = unknownKey();
  const port = await freePort();
  const startedMs = Date.now();
  const daemon = await startDaemon({ API_KEY: key, HOLD_RECHECK_MS: '1000' }, port);
  // no source and no cron: only the check at start can tell
  const refused = await daemon.waitForLog((l) => l.event === 'daemon.api_key_refused', WAIT_MS, 'the refusal logged');
  const refusedMs = Date.now() - startedMs;
  await daemon.waitForLog((l) => l.event === 'daemon.started', WAIT_MS, 'daemon started');
  const lines = daemon.logs();
  expect(lines.findIndex((l) => l.event === 'daemon.api_key_refused')).toBeLessThan(
    lines.findIndex((l) => l.event === 'daemon.started'),
  );
  expect(refused).toMatchObject({ level: 50, code: 'unauthorized', keyFingerprint: keyFingerprint(key) });
  expect(refusedMs).toBeLessThan(30_000);
  expect(daemon.stderr()).not.toContain(key);
  expect(await holdRows()).toEqual([{ code: 'unauthorized', key_fingerprint: keyFingerprint(key) }]);

  const held = await admin(port, '/readyz');
  expect(held.status, held.text).toBe(503);
  const body = JSON.parse(held.text) as {
    ready: boolean;
    checks: Record<string, string>;
    holds: string[];
    reason: string;
  };
  expect(body).toMatchObject({
    ready: false,
    checks: { postgres: 'ok', redis: 'ok', migrations: 'ok', upstream: 'held' },
    holds: ['unauthorized'],
  });
  expect(body.reason).toMatch(/^upstream hold: unauthorized/);
  expect(held.text).not.toContain(key);
  expect(await holdGauge(port)).toEqual({ unauthorized: 1, 'upgrade-required': 0, credits: 0 });

  // the key is accepted again (an account for it): the re-check lifts the hold, and both follow
  h.sim.setAccount(key, { maxCredits: 1000, usedCredits: 0 });
  await waitUntil(
    async () => ((await admin(port, '/readyz')).status === 200 ? true : undefined),
    WAIT_MS,
    '/readyz 200 after the lift',
  );
  expect(await holdRows()).toEqual([]);
  expect(await holdGauge(port)).toEqual({ unauthorized: 0, 'upgrade-required': 0, credits: 0 });
});

it('a held cron sync writes a held run at every tick and warns once per source and hold', async () => {
  const sources = [await addSource(0), await addSource(1)];
  const fp = keyFingerprint(h.sim.apiKey);
  // /me cannot judge upgrade-required: no re-check lifts it while the test watches
  expect(await setHold(h.database.sql, fp, 'upgrade-required', 'Batches are not part of this plan.')).toBe(true);
  const daemon = await startDaemon();
  await daemon.waitForLog((l) => l.event === 'daemon.started', WAIT_MS, 'daemon started');
  const callsAtStart = h.sim.stats().total;

  const heldRuns = async (sourceId: number, after: Date) =>
    h.database.sql<{ started_at: Date; detail: string }[]>`
      select started_at, detail from sync_runs where source_id = ${sourceId} and outcome = 'held' and started_at > ${after} order by started_at`;
  const warnings = (sourceId: number) =>
    daemon.logs().filter((l) => l.event === 'sync.held' && l.sourceId === sourceId);
  const watch = async (after: Date): Promise<void> => {
    await waitUntil(
      async () => {
        for (const s of sources) if ((await heldRuns(s, after)).length < 4) return undefined;
        return true;
      },
      WAIT_MS,
      'four held runs of each source',
    );
  };

  const first = new Date(0);
  await watch(first);
  for (const s of sources) {
    const runs = await heldRuns(s, first);
    expect(runs[0]!.detail).toMatch(
      new RegExp(`^upstream hold \\(upgrade-required\\) since .* on the API key with fingerprint ${fp}: no API call$`),
    );
    // one run per tick (a tick a second), not several: a run starts up to a second late (its
    // offset, a busy worker), so N runs of N ticks span at least N - 2 seconds
    const spanMs = runs.at(-1)!.started_at.getTime() - runs[0]!.started_at.getTime();
    expect(runs.length).toBeLessThanOrEqual(Math.floor(spanMs / 1000) + 2);
    expect(warnings(s)).toHaveLength(1);
    expect(warnings(s)[0]).toMatchObject({ level: 40, holds: ['upgrade-required'], keyFingerprint: fp });
  }
  // held: no API call at all
  expect(h.sim.stats().total).toBe(callsAtStart);

  // the hold is lifted and a new one set: one more warning per source, not one per tick
  await clearHolds(h.database.sql, fp);
  expect(await setHold(h.database.sql, fp, 'upgrade-required', 'Batches are not part of this plan.')).toBe(true);
  await watch(new Date());
  for (const s of sources) expect(warnings(s)).toHaveLength(2);
  expect(daemon.logs().filter((l) => l.event === 'sync.held')).toHaveLength(4);
});

it('a hold recorded before holds were per key applies to every key, and a key that works lifts it', async () => {
  const sql = h.database.sql;
  await sql`insert into upstream_holds (code, scope, reason) values ('unauthorized', 'all', 'Invalid API key.')`;
  expect(await setHold(sql, 'bbbbbbbbbbbb', 'credits', 'quota used up')).toBe(true);
  expect((await holdsForKey(sql, 'aaaaaaaaaaaa')).map((x) => [x.code, x.keyFingerprint])).toEqual([
    ['unauthorized', null],
  ]);
  expect((await holdsForKey(sql, 'bbbbbbbbbbbb')).map((x) => [x.code, x.keyFingerprint])).toEqual([
    ['unauthorized', null],
    ['credits', 'bbbbbbbbbbbb'],
  ]);
  expect(await clearHolds(sql, 'aaaaaaaaaaaa')).toEqual(['unauthorized']);
  expect(await holdRows()).toEqual([{ code: 'credits', key_fingerprint: 'bbbbbbbbbbbb' }]);
  const lifted = await sql<{ code: string; key_fingerprint: string | null }[]>`
    select code, key_fingerprint from upstream_hold_events where event = 'lifted'`;
  expect(lifted).toEqual([{ code: 'unauthorized', key_fingerprint: null }]);
});
