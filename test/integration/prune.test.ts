/**
 * `prune` as a real process against rows written with old timestamps: raw payloads of items
 * settled before RAW_RETENTION_DAYS go (sha256 and size kept), everything not settled keeps its
 * payload whatever its age, sync runs older than HISTORY_RETENTION_DAYS go, credit snapshots
 * older than a week are thinned to the first of each hour; a dry run prints the same figures and
 * changes nothing; RAW_RETENTION_DAYS=0 keeps every payload; `replay --batch` of a pruned batch
 * refuses (exit 1) without an API call. The daily job runs once across two "daemons". Every test
 * starts from the same rows, written afresh. The API base URL points at a closed port: a command
 * that called the API would fail.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/log.ts';
import { reopenSunk } from '../../src/db/items.ts';
import { lockStoredItems } from '../../src/db/prune.ts';
import { prune, startDailyPrune, type PruneReport } from '../../src/pipeline/commands/prune.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli, type CliResult } from '../helpers/pipeline.ts';

const OLD_VIDEO = 'job-prune-old-video';
const OLD_TRANSCRIPT = 'job-prune-old-transcript';
const PARTLY = 'job-prune-partly';
const FRESH = 'job-prune-fresh';
/** Items settled this long ago are past the default RAW_RETENTION_DAYS (90). */
const OLD_DAYS = 100;

let database: TestDatabase;
let env: Record<string, string>;

const cli = (args: string[], extra: Record<string, string> = {}): Promise<CliResult> =>
  runCli(args, { ...env, ...extra }, 60_000);

function video(id: string): Record<string, unknown> {
  return {
    id,
    title: `title of ${id}`,
    description: 'd'.repeat(300),
    duration: 61,
    channel: { id: 'UCprune', name: 'Prune channel' },
    tags: ['a'],
    transcriptLanguages: ['en'],
  };
}

/** A transcript item of about 20 KB, like a real one (random words: TOAST cannot squeeze it to nothing). */
function transcriptItem(videoId: string): Record<string, unknown> {
  const content = Array.from({ length: 200 }, (_, i) => ({
    text: randomBytes(45).toString('base64'),
    offset: i * 1000,
    duration: 1000,
  }));
  return { videoId, transcript: { content, lang: 'en', availableLangs: ['en'] } };
}

interface Seed {
  jobId: string;
  videoId: string;
  state: 'processing' | 'landed' | 'sunk' | 'failed' | 'retryable' | 'quarantined';
  payload?: unknown;
  payloadRaw?: string;
  errorCode?: string;
  /** landed (a sunk item: and sunk; a failed one: last written) this many days ago; none: never landed */
  daysAgo?: number;
  reasonCode?: string;
}

async function insertItem(r: Seed): Promise<void> {
  const payload = r.payload === undefined ? null : JSON.stringify(r.payload);
  const days = r.daysAgo ?? null;
  await database.sql`
    insert into batch_items (job_id, video_id, state, error_code, payload, payload_raw, reason, reason_code, landed_at, sunk_at, updated_at)
    values (${r.jobId}, ${r.videoId}, ${r.state}, ${r.errorCode ?? null}, ${payload}::text::jsonb, ${r.payloadRaw ?? null},
      ${r.reasonCode ? 'quarantined by a stricter version' : null}, ${r.reasonCode ?? null},
      -- a failed item may carry no landed_at (the upstream's error, recorded at landing): prune
      -- then goes by when the row was last written
      case when ${days}::int is not null and ${r.state} <> 'failed' then now() - make_interval(days => ${days}::int) end,
      case when ${r.state} = 'sunk' then now() - make_interval(days => ${days}::int) end,
      coalesce(now() - make_interval(days => ${days}::int), now()))`;
}

/** Items past retention in the seed: what prune drops. */
const ELIGIBLE = [
  'tOld01',
  'tOld02',
  'tOld03',
  'tOld04',
  'tRaw01',
  'tFail01',
  'vOld01',
  'vOld02',
  'vOld03',
  'pOld01',
  'pOld02',
];
/** Items that keep their payload: not settled (however old), or settled within retention. */
const KEPT = ['tLanded01', 'tQuar01', 'tRetry01', 'pNew01', 'fNew01', 'fNew02'];

async function seed(): Promise<void> {
  const sql = database.sql;
  await sql`truncate batch_items, batches, video_sync, videos, transcripts, sync_runs, credit_snapshots, prune_runs, sources cascade`;
  const batch = (jobId: string, kind: string, days: number) => sql`
    insert into batches (job_id, kind, lang, status, total, succeeded, failed, credits_estimated, request, submitted_at, completed_at, terminal_at)
    values (${jobId}, ${kind}, ${kind === 'transcript' ? 'en' : null}, 'completed', 0, 0, 0, 1, ${sql.json({ videoIds: [] })},
      now() - make_interval(days => ${days}::int), now() - make_interval(days => ${days}::int), now() - make_interval(days => ${days}::int))`;
  await batch(OLD_VIDEO, 'video', OLD_DAYS);
  await batch(OLD_TRANSCRIPT, 'transcript', OLD_DAYS);
  await batch(PARTLY, 'video', OLD_DAYS);
  await batch(FRESH, 'video', 5);

  for (const id of ['tOld01', 'tOld02', 'tOld03', 'tOld04']) {
    await insertItem({
      jobId: OLD_TRANSCRIPT,
      videoId: id,
      state: 'sunk',
      payload: transcriptItem(id),
      daysAgo: OLD_DAYS,
    });
  }
  // kept as text (jsonb could not hold it): its text is what the sha256 is of
  await insertItem({
    jobId: OLD_TRANSCRIPT,
    videoId: 'tRaw01',
    state: 'sunk',
    payloadRaw: JSON.stringify(transcriptItem('tRaw01')),
    daysAgo: OLD_DAYS,
  });
  // a permanent error, settled when it landed
  await insertItem({
    jobId: OLD_TRANSCRIPT,
    videoId: 'tFail01',
    state: 'failed',
    errorCode: 'not-found',
    payload: { videoId: 'tFail01', errorCode: 'not-found' },
    daysAgo: OLD_DAYS,
  });
  // not settled, however old: landed and never sunk, set aside, left retryable, still processing
  await insertItem({
    jobId: OLD_TRANSCRIPT,
    videoId: 'tLanded01',
    state: 'landed',
    payload: transcriptItem('tLanded01'),
    daysAgo: OLD_DAYS,
  });
  await insertItem({
    jobId: OLD_TRANSCRIPT,
    videoId: 'tQuar01',
    state: 'quarantined',
    payload: transcriptItem('tQuar01'),
    daysAgo: OLD_DAYS,
    reasonCode: 'schema',
  });
  await insertItem({
    jobId: OLD_TRANSCRIPT,
    videoId: 'tRetry01',
    state: 'retryable',
    errorCode: 'internal-error',
    payload: { videoId: 'tRetry01', errorCode: 'internal-error' },
  });
  await insertItem({ jobId: OLD_TRANSCRIPT, videoId: 'tProc01', state: 'processing' });
  for (const id of ['vOld01', 'vOld02', 'vOld03']) {
    await insertItem({
      jobId: OLD_VIDEO,
      videoId: id,
      state: 'sunk',
      payload: { videoId: id, video: video(id) },
      daysAgo: OLD_DAYS,
    });
  }
  for (const id of ['pOld01', 'pOld02']) {
    await insertItem({
      jobId: PARTLY,
      videoId: id,
      state: 'sunk',
      payload: { videoId: id, video: video(id) },
      daysAgo: OLD_DAYS,
    });
  }
  await insertItem({
    jobId: PARTLY,
    videoId: 'pNew01',
    state: 'sunk',
    payload: { videoId: 'pNew01', video: video('pNew01') },
    daysAgo: 10,
  });
  for (const id of ['fNew01', 'fNew02']) {
    await insertItem({
      jobId: FRESH,
      videoId: id,
      state: 'sunk',
      payload: { videoId: id, video: video(id) },
      daysAgo: 5,
    });
  }

  // three runs past HISTORY_RETENTION_DAYS (180; one never finished), two recent
  await sql`
    insert into sync_runs (started_at, finished_at, outcome, detail)
    values (now() - interval '200 days', now() - interval '200 days', 'submitted', 'old 1'),
      (now() - interval '190 days', now() - interval '190 days', 'up-to-date', 'old 2'),
      (now() - interval '181 days', null, null, 'old, never finished'),
      (now() - interval '10 days', now() - interval '10 days', 'submitted', 'recent 1'),
      (now() - interval '1 day', now() - interval '1 day', 'up-to-date', 'recent 2')`;

  // ten days ago (at microseconds, as now() writes them): three in one hour (the first stays), two
  // in the next (the first stays), one alone; two days ago: four in one hour, all kept (within a
  // week); the latest, a minute ago
  await sql`
    insert into credit_snapshots (taken_at, used_credits, max_credits, reason)
    select date_trunc('hour', now() - interval '10 days') + m * interval '1 minute' + interval '0.123456 seconds', 100 + m, 10000, label
    from (values (1, 'h0 first'), (10, 'h0 second'), (50, 'h0 third'), (65, 'h1 first'), (66, 'h1 second'), (180, 'h3 only')) as v(m, label)`;
  await sql`
    insert into credit_snapshots (taken_at, used_credits, max_credits, reason)
    select date_trunc('hour', now() - interval '2 days') + m * interval '1 minute', 500 + m, 10000, 'recent'
    from generate_series(1, 4) as m`;
  await sql`insert into credit_snapshots (taken_at, used_credits, max_credits, reason) values (now() - interval '1 minute', 900, 10000, 'latest')`;
}

/** Everything prune may write, to prove a dry run writes nothing. */
async function snapshot(): Promise<unknown> {
  return {
    items: await database.sql`select * from batch_items order by job_id, video_id`,
    runs: await database.sql`select * from sync_runs order by id`,
    snapshots: await database.sql`select * from credit_snapshots order by id`,
  };
}

interface ItemRaw {
  video_id: string;
  state: string;
  text: string | null;
  size: number;
  payload_sha256: string | null;
  payload_bytes: number | null;
  payload_pruned_at: Date | null;
}

async function itemsRaw(): Promise<Map<string, ItemRaw>> {
  const rows = await database.sql<ItemRaw[]>`
    select video_id, state, coalesce(payload_raw, payload::text) as text,
      coalesce(pg_column_size(payload), 0) + coalesce(pg_column_size(payload_raw), 0) as size,
      payload_sha256, payload_bytes, payload_pruned_at
    from batch_items order by video_id`;
  return new Map(rows.map((r) => [r.video_id, r]));
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

function jsonReport(r: CliResult): PruneReport {
  expectExit(r, 0);
  return JSON.parse(r.stdout) as PruneReport;
}

/** The seed's state after a prune with the default settings, whoever ran it. */
async function expectPrunedSeed(before: Map<string, ItemRaw>): Promise<void> {
  const after = await itemsRaw();
  for (const id of ELIGIBLE) {
    const a = after.get(id)!;
    const b = before.get(id)!;
    expect(a.text, id).toBeNull();
    expect(a.state, id).toBe(b.state);
    expect(a.payload_pruned_at, id).not.toBeNull();
    expect(a.payload_sha256, id).toBe(sha256(b.text!));
    expect(a.payload_bytes, id).toBe(Buffer.byteLength(b.text!, 'utf8'));
  }
  for (const id of [...KEPT, 'tProc01']) {
    const a = after.get(id)!;
    expect(a.text, id).toBe(before.get(id)!.text);
    expect(a.payload_pruned_at, id).toBeNull();
    expect(a.payload_sha256, id).toBeNull();
  }
  const runs = await database.sql<{ detail: string }[]>`select detail from sync_runs order by started_at`;
  expect(runs.map((r) => r.detail)).toEqual(['recent 1', 'recent 2']);
  const snaps = await database.sql<{ reason: string }[]>`select reason from credit_snapshots order by taken_at, id`;
  expect(snaps.map((s) => s.reason)).toEqual([
    'h0 first',
    'h1 first',
    'h3 only',
    'recent',
    'recent',
    'recent',
    'recent',
    'latest',
  ]);
}

beforeAll(async () => {
  database = await createTestDatabase('prune');
  env = {
    DATABASE_URL: database.url,
    REDIS_URL: loadConfig({}).redisUrl,
    QUEUE_PREFIX: `{vsi-test-prune-${randomBytes(4).toString('hex')}}`,
    // nothing listens there: a command that called the API would fail
    API_BASE_URL: 'http://127.0.0.1:9/v1',
    API_KEY: 'not-used-by-prune',
    LOG_LEVEL: 'warn',
  };
}, 60_000);

beforeEach(async () => {
  await seed();
});

afterAll(async () => {
  await database?.drop();
});

describe('prune', () => {
  it('--dry-run prints per table what prune would free, the same figures prune then frees, and changes nothing', async () => {
    const before = await snapshot();
    const raw = await itemsRaw();
    const wantItemBytes = ELIGIBLE.reduce((n, id) => n + raw.get(id)!.size, 0);

    const dry = jsonReport(await cli(['prune', '--dry-run', '--json']));
    expect(dry.dryRun).toBe(true);
    expect(dry.freed.batch_items).toEqual({ rows: ELIGIBLE.length, bytes: wantItemBytes });
    expect(dry.freed.sync_runs.rows).toBe(3);
    expect(dry.freed.credit_snapshots.rows).toBe(3);
    expect(dry.freed.sync_runs.bytes).toBeGreaterThan(0);
    expect(dry.total.rows).toBe(ELIGIBLE.length + 6);
    // five 20 KB transcripts as stored (TOAST compresses random base64 to about 3/4), and the rest
    expect(wantItemBytes).toBeGreaterThan(5 * 14_000);

    const text = await cli(['prune', '--dry-run']);
    expectExit(text, 0);
    expect(text.stdout).toMatch(/^prune --dry-run \(run \d+, \d+\.\d s\): would free, nothing changed$/m);
    expect(text.stdout).toMatch(
      new RegExp(
        `^batch_items\\s+${ELIGIBLE.length}\\s+\\d+\\.\\d kB\\s+raw payloads of items stored or failed before .* \\(RAW_RETENTION_DAYS=90\\)$`,
        'm',
      ),
    );
    expect(text.stdout).toMatch(
      /^sync_runs\s+3\s+\d+(\.\d)? k?B\s+runs started before .*\(HISTORY_RETENTION_DAYS=180\)$/m,
    );
    expect(text.stdout).toMatch(/^credit_snapshots\s+3\s+/m);
    expect(text.stdout).toMatch(new RegExp(`^total\\s+${ELIGIBLE.length + 6}\\s+\\d+\\.\\d kB$`, 'm'));
    expect(await snapshot()).toEqual(before);
    const runs = await database.sql<{ dry_run: boolean; trigger: string; finished: boolean; error: string | null }[]>`
      select dry_run, trigger, finished_at is not null as finished, error from prune_runs order by id`;
    expect(runs).toEqual([
      { dry_run: true, trigger: 'cli', finished: true, error: null },
      { dry_run: true, trigger: 'cli', finished: true, error: null },
    ]);

    const real = jsonReport(await cli(['prune', '--json']));
    expect(real.dryRun).toBe(false);
    expect(real.freed).toEqual(dry.freed);
  });

  it('drops the raw payloads of settled items only (sha256 and size kept), old sync runs, and extra snapshots; records the run', async () => {
    const before = await itemsRaw();
    const counters = () => database.sql`select * from batch_item_counts order by job_id, state, error_code`;
    const countsBefore = await counters();
    const r = await cli(['prune']);
    expectExit(r, 0);
    expect(r.stdout).toMatch(/^prune \(run \d+, \d+\.\d s\): freed$/m);
    expect(r.stdout).toMatch(new RegExp(`^batch_items\\s+${ELIGIBLE.length}\\s+`, 'm'));
    expect(r.stdout).toMatch(/^sync_runs\s+3\s+/m);
    expect(r.stdout).toMatch(/^credit_snapshots\s+3\s+/m);
    await expectPrunedSeed(before);
    // items keep their state: the per-batch counters (kept by triggers on batch_items) do not move
    expect(await counters()).toEqual(countsBefore);

    const [run] = await database.sql<
      {
        dry_run: boolean;
        trigger: string;
        finished: boolean;
        error: string | null;
        freed: Record<string, { rows: number }>;
      }[]
    >`
      select dry_run, trigger, finished_at is not null as finished, error, freed from prune_runs`;
    expect(run).toMatchObject({ dry_run: false, trigger: 'cli', finished: true, error: null });
    expect(run!.freed.batch_items!.rows).toBe(ELIGIBLE.length);
    expect(run!.freed.sync_runs!.rows).toBe(3);

    // nothing left to do: a second run frees nothing and changes nothing
    const again = jsonReport(await cli(['prune', '--json']));
    expect(again.total).toEqual({ rows: 0, bytes: 0 });
  });

  it('gives the same result in statements of two rows (snapshot hours spanning statements keep only their first)', async () => {
    const before = await itemsRaw();
    const config = loadConfig({});
    const r = await prune(
      { sql: database.sql, log: silentLogger(), settings: config.pipeline },
      { dryRun: false, trigger: 'cli', chunkRows: 2 },
    );
    expect(r.freed.batch_items.rows).toBe(ELIGIBLE.length);
    expect(r.freed.credit_snapshots.rows).toBe(3);
    await expectPrunedSeed(before);
  });

  it('keeps the latest snapshot of all, even past a week and not the first of its hour', async () => {
    const sql = database.sql;
    await sql`truncate credit_snapshots`;
    await sql`
      insert into credit_snapshots (taken_at, used_credits, reason)
      select date_trunc('hour', now() - interval '10 days') + m * interval '1 minute', m, label
      from (values (1, 'first'), (2, 'second'), (3, 'latest')) as v(m, label)`;
    expectExit(await cli(['prune']), 0);
    const snaps = await sql<{ reason: string }[]>`select reason from credit_snapshots order by taken_at`;
    expect(snaps.map((s) => s.reason)).toEqual(['first', 'latest']);
  });

  it('RAW_RETENTION_DAYS=0 and HISTORY_RETENTION_DAYS=0 keep every payload and every sync run', async () => {
    const before = await snapshot();
    const r = await cli(['prune'], { RAW_RETENTION_DAYS: '0', HISTORY_RETENTION_DAYS: '0' });
    expectExit(r, 0);
    expect(r.stdout).toMatch(/^batch_items\s+0\s+0 B\s+raw payloads kept \(RAW_RETENTION_DAYS=0\)$/m);
    expect(r.stdout).toMatch(/^sync_runs\s+0\s+0 B\s+kept \(HISTORY_RETENTION_DAYS=0\)$/m);
    const after = (await snapshot()) as { items: unknown; runs: unknown };
    expect(after.items).toEqual((before as { items: unknown }).items);
    expect(after.runs).toEqual((before as { runs: unknown }).runs);
  });

  it('replay --batch of a pruned batch says how many items were pruned and when, exits 1, and changes nothing', async () => {
    expectExit(await cli(['prune']), 0);
    const items = async () =>
      database.sql`select job_id, video_id, state, payload, payload_pruned_at from batch_items order by job_id, video_id`;
    const before = await items();

    const partly = await cli(['replay', '--batch', PARTLY]);
    expectCleanError(
      partly,
      1,
      `batch ${PARTLY}: 2 of its 3 stored item(s) have no raw copy left`,
      'RAW_RETENTION_DAYS, now 90',
      /pruned their payloads on \d{4}-\d\d-\d\d/,
      'nothing was changed, no API call',
    );
    const whole = await cli(['replay', '--batch', OLD_VIDEO]);
    expectCleanError(whole, 1, `batch ${OLD_VIDEO}: 3 of its 3 stored item(s) have no raw copy left`);
    expect(await items()).toEqual(before);

    // a batch within retention still replays from raw
    const fresh = await cli(['replay', '--batch', FRESH]);
    expectExit(fresh, 0);
    expect(fresh.stdout).toMatch(/2 stored item\(s\) re-sunk from raw: 2 row\(s\) inserted/);
  });

  it("a replay holding a batch's stored items is not raced: prune skips them without waiting, and they keep their payloads", async () => {
    const deps = { sql: database.sql, log: silentLogger(), settings: loadConfig({}).pipeline };
    const before = await itemsRaw();
    let during: PruneReport | undefined;
    await database.sql.begin(async (tx) => {
      // what replay --batch does: hold the stored items, find none pruned, re-open them
      expect(await lockStoredItems(tx, OLD_VIDEO)).toMatchObject({ stored: 3, pruned: 0 });
      // on other connections, while the items are held: a prune that waited for them would never return
      during = await prune(deps, { dryRun: false, trigger: 'cli' });
      expect(await reopenSunk(tx, OLD_VIDEO)).toBe(3);
    });
    expect(during!.freed.batch_items.rows).toBe(ELIGIBLE.length - 3);
    // re-opened (landed again, for the sink): not settled any more, so the next prune leaves them too
    const after = await prune(deps, { dryRun: false, trigger: 'cli' });
    expect(after.freed.batch_items.rows).toBe(0);
    const items = await itemsRaw();
    for (const id of ['vOld01', 'vOld02', 'vOld03']) {
      expect(items.get(id), id).toMatchObject({ state: 'landed', text: before.get(id)!.text, payload_pruned_at: null });
    }
  });

  it('a quarantined item keeps its payload through prune, and replay --quarantined re-sinks it from raw', async () => {
    expectExit(await cli(['prune']), 0);
    const r = await cli(['replay', '--quarantined']);
    expectExit(r, 0);
    expect(r.stdout).toMatch(/re-sank 1 quarantined item\(s\) from raw: 1 stored/);
    const [t] = await database.sql<
      { n: number }[]
    >`select count(*)::int as n from transcripts where video_id = 'tQuar01'`;
    expect(t!.n).toBe(1);
    // stored just now: its payload stays until it is RAW_RETENTION_DAYS old
    const after = await itemsRaw();
    expect(after.get('tQuar01')).toMatchObject({ state: 'sunk', payload_pruned_at: null });
    expect(after.get('tQuar01')!.text).not.toBeNull();
  });
});

describe('the daily prune', () => {
  it('runs once across two daemons, not again within 24 h, and again once a day has passed or the last run failed', async () => {
    const deps = { sql: database.sql, log: silentLogger(), settings: loadConfig({}).pipeline };
    const hour = 3_600_000;
    const a = startDailyPrune(deps, { checkIntervalMs: hour });
    const b = startDailyPrune(deps, { checkIntervalMs: hour });
    const [ra, rb] = await Promise.all([a.check(), b.check()]);
    const reports = [ra, rb].filter((r) => r !== undefined);
    expect(reports).toHaveLength(1);
    expect(reports[0]!.freed.batch_items.rows).toBe(ELIGIBLE.length);
    const daily = () =>
      database.sql<
        { id: number; error: string | null }[]
      >`select id, error from prune_runs where trigger = 'daily' order by id`;
    expect(await daily()).toHaveLength(1);

    // claimed within the last 24 h: neither runs it again
    expect(await a.check()).toBeUndefined();
    expect(await b.check()).toBeUndefined();
    expect(await daily()).toHaveLength(1);

    // a day later, one of them runs it again
    await database.sql`update prune_runs set started_at = started_at - interval '25 hours'`;
    expect(await b.check()).toBeDefined();
    expect(await daily()).toHaveLength(2);

    // a run that failed leaves the day open
    await database.sql`update prune_runs set error = 'connection lost' where id = (select max(id) from prune_runs)`;
    expect(await a.check()).toBeDefined();
    expect(await daily()).toHaveLength(3);
    await Promise.all([a.stop(), b.stop()]);
  });
});
