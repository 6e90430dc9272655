/**
 * The counters the triggers of migrations/0005 and 0006 keep (`batch_item_counts`, `item_counts`
 * with its `pending` key, `batch_counts`, `source_stats`) against a fresh count(*) of what they
 * count, after every kind of write the pipeline and a person make: landing (insert, and
 * processing → landed over ON CONFLICT), the sink (landed → sunk / quarantined), expiry, replay
 * (sunk → landed, quarantined → landed or failed), re-submission pointers set and cleared, a
 * prune dropping payloads, deleting items and whole batches (cascade), truncation; then
 * concurrent landing and sinking transactions on batches that share counter rows, and a database
 * of 0005 migrated to 0006. The readers built on the counters (status, /metrics, batch progress)
 * must say what the count says.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { batchProgress } from '../../src/db/batch-progress.ts';
import { insertSubmittedBatch, markRetryableTakenUp } from '../../src/db/batch-records.ts';
import { batchCountsByStatus, creditsEstimatedTotal } from '../../src/db/batches.ts';
import { createDb, type Queryable } from '../../src/db/connection.ts';
import { itemErrorCodeCounts, itemStateCounts } from '../../src/db/item-counts.ts';
import {
  landItems,
  markQuarantined,
  markSunk,
  markUnfinishedRetryable,
  reopenSunk,
  type LandItem,
} from '../../src/db/items.ts';
import { committedMigrations, ensureDatabase, MIGRATIONS_FOLDER, migrateDatabase } from '../../src/db/migrate.ts';
import { quarantineCounts, requalifyQuarantined } from '../../src/db/quarantine.ts';
import { markPagesGone, pageTotals, storePages, type PageRow } from '../../src/db/pages.ts';
import { pageCounts } from '../../src/db/admin-pages.ts';
import {
  MEDIA_COUNT_SHARDS,
  mediaCounts,
  mediaTotals,
  setMediaTranscriptState,
  storeMediaMetadata,
  storeMediaTranscript,
  storeUnavailableMedia,
  type MediaTotals,
} from '../../src/db/media.ts';
import { mediaRowFromApi } from '../../src/pipeline/ingest/media-rows.ts';
import { addSourceVideos, rememberVideos } from '../../src/db/source-videos.ts';
import { sourcesWithStats } from '../../src/db/source-stats.ts';
import {
  languageCoverage,
  outcomeCounts,
  outcomeErrorCounts,
  sourceLanguageCoverage,
  sourceOutcomes,
} from '../../src/db/video-outcomes.ts';
import { claimVideos, markSinkOutcome, pointClaimsAt, recordOutcomes, releaseClaims } from '../../src/db/video-sync.ts';
import { BATCH_COUNT_SHARDS, ITEM_COUNT_SHARDS } from '../../src/domain/items.ts';
import { pageSha256 } from '../../src/domain/pages.ts';
import { createTestDatabase, dropDatabase, testDatabaseName, testServerUrl, type TestDatabase } from '../helpers/db.ts';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase('counters');
});

afterAll(async () => {
  await database?.drop();
});

beforeEach(async () => {
  await database.sql`truncate batch_items, batches, videos, transcripts, source_videos, sources, video_sync restart identity cascade`;
});

async function batch(
  jobId: string,
  kind: 'video' | 'transcript' = 'video',
  sourceId: number | null = null,
  sql: Queryable = database.sql,
): Promise<void> {
  await insertSubmittedBatch(sql, {
    jobId,
    sourceId,
    kind,
    lang: kind === 'transcript' ? 'en' : null,
    mode: 'batch',
    creditsEstimated: 11,
    request: { videoIds: [] },
    textOnly: false,
    replayOf: null,
    firstPollDelayMs: 0,
  });
}

const landed = (videoId: string): LandItem => ({
  videoId,
  state: 'landed',
  errorCode: null,
  payload: { videoId, video: { id: videoId } },
});
const failed = (videoId: string, errorCode: string): LandItem => ({
  videoId,
  state: 'failed',
  errorCode,
  payload: { videoId, errorCode },
});
const processing = (videoId: string): LandItem => ({
  videoId,
  state: 'processing',
  errorCode: 'processing',
  payload: { videoId, errorCode: 'processing' },
});
const retryable = (videoId: string): LandItem => ({
  videoId,
  state: 'retryable',
  errorCode: 'internal-error',
  payload: { videoId, errorCode: 'internal-error' },
});
const quarantined = (videoId: string, reasonCode: 'schema' | 'too-large' | undefined): LandItem => ({
  videoId,
  state: 'quarantined',
  errorCode: null,
  payload: { videoId, odd: true },
  reason: 'does not match',
  reasonCode,
});
const ids = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`);

/** Every counter equals a fresh count of `batch_items`, per batch and per shard; the readers agree. */
async function expectItemCountersExact(sql: Queryable = database.sql): Promise<void> {
  const fresh = await sql`
    select job_id, state, coalesce(error_code, '') as error_code, count(*)::int as n
    from batch_items group by 1, 2, 3 order by 1, 2, 3`;
  const kept = await sql`select job_id, state, error_code, n from batch_item_counts where n <> 0 order by 1, 2, 3`;
  expect(kept).toEqual(fresh);
  // the shard of each batch is the one ITEM_COUNT_SHARDS says: a trigger counting with another
  // number puts some batch in another row
  const freshShards = await sql`
    select (abs(hashtext(job_id)) % ${ITEM_COUNT_SHARDS})::int as shard, state, coalesce(error_code, '') as error_code,
      coalesce(reason_code, '') as reason_code, state = 'retryable' and resubmitted_in is null as pending, count(*)::int as n
    from batch_items group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5`;
  const keptShards = await sql`
    select shard::int, state, error_code, reason_code, pending, n::int from item_counts where n <> 0 order by 1, 2, 3, 4, 5`;
  expect(keptShards).toEqual(freshShards);

  // what status, /metrics and backfill progress read
  const byState = await sql<
    { state: string; n: number }[]
  >`select state, count(*)::int as n from batch_items group by state`;
  const { byState: read, retryablePending } = await itemStateCounts(sql);
  for (const [state, n] of Object.entries(read)) expect(n, state).toBe(byState.find((r) => r.state === state)?.n ?? 0);
  const [pending] = await sql<{ n: number }[]>`
    select count(*)::int as n from batch_items where state = 'retryable' and resubmitted_in is null`;
  expect(retryablePending).toBe(pending!.n);
  const errors = await sql<{ errorCode: string; state: string; items: number }[]>`
    select error_code as "errorCode", state, count(*)::int as items from batch_items
    where error_code is not null group by 1, 2 order by items desc, 1, 2`;
  expect(await itemErrorCodeCounts(sql)).toEqual(errors);
  const reasons = await sql<{ reason: string; n: number }[]>`
    select coalesce(reason_code, 'unknown') as reason, count(*)::int as n from batch_items where state = 'quarantined' group by 1`;
  const byReason = await quarantineCounts(sql);
  for (const [reason, n] of Object.entries(byReason))
    expect(n, reason).toBe(reasons.find((r) => r.reason === reason)?.n ?? 0);

  const jobIds = (await sql<{ job_id: string }[]>`select job_id from batches`).map((r) => r.job_id);
  for (const b of await batchProgress(sql, jobIds)) {
    const rows = await sql<{ state: string; error_code: string | null; n: number }[]>`
      select state, error_code, count(*)::int as n from batch_items where job_id = ${b.jobId} group by 1, 2`;
    for (const state of ['processing', 'landed', 'sunk', 'failed', 'retryable', 'quarantined'] as const) {
      expect(b[state], `${b.jobId} ${state}`).toBe(rows.filter((r) => r.state === state).reduce((n, r) => n + r.n, 0));
    }
    expect(b.errors).toEqual(
      Object.fromEntries(
        rows.filter((r) => r.state === 'failed' && r.error_code !== null).map((r) => [r.error_code, r.n]),
      ),
    );
  }
}

/** Each source's stored videos and transcripts as sourcesWithCounts counted them, against source_stats. */
async function expectSourceStatsExact(): Promise<void> {
  const { sql } = database;
  const fresh = await sql<{ id: number; videos: number; transcripts: number }[]>`
    select s.id,
      (select count(*) from source_videos sv join videos v on v.id = sv.video_id where sv.source_id = s.id)::int as videos,
      (select count(*) from source_videos sv join transcripts t on t.video_id = sv.video_id where sv.source_id = s.id)::int as transcripts
    from sources s order by s.id`;
  const read = await sourcesWithStats(sql);
  expect(read.map((s) => ({ id: s.id, videos: s.videos, transcripts: s.transcripts }))).toEqual(fresh);
}

async function addSource(ref: string): Promise<number> {
  const [row] = await database.sql<{ id: number }[]>`
    insert into sources (kind, ref, external_id, max_videos) values ('playlist', ${ref}, ${ref}, 100) returning id`;
  return row!.id;
}

async function storeVideos(videoIds: string[]): Promise<void> {
  // as the sink writes them: an upsert; rows already stored are updated, not counted again
  await database.sql`
    insert into videos (id, title) select v, 'title of ' || v from unnest(${videoIds}::text[]) as v
    on conflict (id) do update set title = excluded.title || ' (again)'`;
}

async function storeTranscripts(videoIds: string[], lang: string): Promise<void> {
  await database.sql`
    insert into transcripts (video_id, lang, text, content_sha256) select v, ${lang}, 'words', md5(v) from unnest(${videoIds}::text[]) as v
    on conflict (video_id, lang) do update set text = excluded.text || ' again'`;
}

describe('item counters', () => {
  it('equal a fresh count after landing, sinking, expiry, replay, prune, deletes and truncation', async () => {
    const { sql } = database;
    const jobs = ['job-a', 'job-b', 'job-c', 'job-d', 'job-e', 'job-f'];
    for (const [i, j] of jobs.entries()) await batch(j, i % 2 === 0 ? 'video' : 'transcript');

    // landing: new rows of every state, in chunks of 7 (several statements per call)
    const [a, b, c] = [ids('va', 40), ids('vb', 30), ids('vc', 25)];
    await landItems(
      sql,
      'job-a',
      [
        ...a.slice(0, 20).map(landed),
        ...a.slice(20, 30).map((v) => failed(v, 'not-found')),
        ...a.slice(30).map(processing),
      ],
      7,
    );
    await landItems(
      sql,
      'job-b',
      [
        ...b.slice(0, 10).map(landed),
        ...b.slice(10, 20).map(retryable),
        ...b.slice(20, 25).map((v) => quarantined(v, 'schema')),
        ...b.slice(25).map((v) => quarantined(v, undefined)),
      ],
      7,
    );
    await landItems(sql, 'job-c', [
      ...c.slice(0, 20).map(processing),
      ...c.slice(20).map((v) => failed(v, 'transcript-unavailable')),
    ]);
    await expectItemCountersExact();

    // a later poll: processing → landed / failed (ON CONFLICT DO UPDATE), the rest unchanged
    await landItems(
      sql,
      'job-a',
      [...a.slice(30, 35).map(landed), ...a.slice(35).map((v) => failed(v, 'forbidden')), ...a.slice(0, 5).map(landed)],
      4,
    );
    await landItems(sql, 'job-c', c.slice(0, 10).map(landed));
    await expectItemCountersExact();

    // the sink: landed → sunk, some → quarantined
    await sql.begin(async (tx) => {
      await markSunk(tx, 'job-a', a.slice(0, 18));
      await markQuarantined(
        tx,
        'job-a',
        a
          .slice(18, 20)
          .map((videoId) => ({ videoId, reason: 'Postgres cannot store it', reasonCode: 'unstorable' as const })),
      );
    });
    await markSunk(sql, 'job-c', c.slice(0, 10));
    await expectItemCountersExact();

    // expiry: what is still processing becomes retryable
    await markUnfinishedRetryable(sql, 'job-c', 'processing');
    await expectItemCountersExact();

    // replay: stored items re-landed, then sunk again; quarantined items requalified
    await reopenSunk(sql, 'job-a');
    await expectItemCountersExact();
    await markSunk(sql, 'job-a', a.slice(0, 18));
    await requalifyQuarantined(
      sql,
      { jobId: 'job-b', kind: 'transcript', lang: 'en' },
      [
        ...b
          .slice(20, 23)
          .map((videoId) => ({ videoId, state: 'landed' as const, errorCode: null, reason: null, reasonCode: null })),
        { videoId: b[23]!, state: 'failed', errorCode: 'not-found', reason: null, reasonCode: null },
        { videoId: b[25]!, state: 'quarantined', errorCode: null, reason: 'still odd', reasonCode: 'too-large' },
      ],
      60_000,
    );
    await expectItemCountersExact();

    // a prune dropping payloads changes no key: no counter written (the rows keep the transaction
    // that last wrote them)
    const perBatchRows = () =>
      sql`select job_id, state, error_code, xmin::text from batch_item_counts order by 1, 2, 3`;
    const shardRows = () =>
      sql`select shard, state, error_code, reason_code, pending, xmin::text from item_counts order by 1, 2, 3, 4, 5`;
    const before = await perBatchRows();
    const shardRowsBefore = await shardRows();
    await sql`update batch_items set payload = null, payload_pruned_at = now() where state in ('sunk', 'failed')`;
    expect(await perBatchRows()).toEqual(before);
    expect(await shardRows()).toEqual(shardRowsBefore);

    // re-submissions taking retryable items up (job-b's 10 and job-c's 10 were pending): the items
    // leave `pending` in item_counts; batch_item_counts has no such key and is not written
    const pending = async () => (await itemStateCounts(sql)).retryablePending;
    expect(await pending()).toBe(20);
    await batch('job-resubmit', 'transcript');
    await markRetryableTakenUp(sql, 'transcript', 'en', 'job-resubmit', b.slice(10, 15));
    await batch('job-resubmit-v');
    await markRetryableTakenUp(sql, 'video', null, 'job-resubmit-v', c.slice(10, 13));
    expect(await perBatchRows()).toEqual(before);
    expect(await pending()).toBe(12);
    await expectItemCountersExact();

    // no code clears a pointer; a person's SQL may (a re-submitting batch deleted by hand)
    await sql`update batch_items set resubmitted_in = null where resubmitted_in = 'job-resubmit-v'`;
    expect(await pending()).toBe(15);
    await expectItemCountersExact();
    // one statement setting some pointers and clearing others in the same counter rows
    await sql`
      update batch_items set resubmitted_in = case when resubmitted_in is null then 'job-resubmit' end
      where job_id = 'job-b' and state = 'retryable' and video_id <> ${b[19]!}`;
    expect(await pending()).toBe(10 + 5 + 1);
    await expectItemCountersExact();
    // a re-submitted item, and a pending one, leaving `retryable` (a later answer, by hand)
    await sql`update batch_items set state = 'failed', error_code = 'not-found' where job_id = 'job-b' and video_id in (${b[15]!}, ${b[19]!})`;
    expect(await pending()).toBe(15);
    await expectItemCountersExact();

    // a person deleting items, pending and re-submitted ones, and a whole batch (its items and
    // counts go by cascade)
    await sql`delete from batch_items where job_id = 'job-b' and state = 'retryable' and resubmitted_in is null`;
    expect(await pending()).toBe(10);
    await expectItemCountersExact();
    await sql`delete from batch_items where job_id = 'job-b' and state = 'retryable'`;
    await expectItemCountersExact();
    await sql`delete from batches where job_id = 'job-a'`;
    expect(await sql`select 1 from batch_item_counts where job_id = 'job-a'`).toHaveLength(0);
    await expectItemCountersExact();

    // truncation clears both, whether of the items alone or of the batches too
    await sql`truncate batch_items`;
    expect(await sql`select 1 from batch_item_counts`).toHaveLength(0);
    expect(await sql`select 1 from item_counts`).toHaveLength(0);
    await landItems(sql, 'job-d', [...ids('vd', 5).map(landed), ...ids('vdr', 4).map(retryable)]);
    expect(await pending()).toBe(4);
    await expectItemCountersExact();
    await sql`truncate batches cascade`;
    expect(await sql`select 1 from item_counts`).toHaveLength(0);
    expect(await pending()).toBe(0);
    await expectItemCountersExact();
  });

  it('stay exact under concurrent landing and sinking transactions on batches that share counter rows', async () => {
    // its own pool: a dozen transactions at once
    const pool = createDb(database.url, { max: 12 });
    try {
      const jobs = Array.from({ length: 24 }, (_, i) => `job-c${i}`);
      for (const j of jobs) await batch(j);
      await batch('job-c-resubmit');
      // 24 batches over 16 shards: several share a shard's rows; each batch's own rows are
      // shared by the transactions that land and sink it
      const work = jobs.flatMap((jobId, i) => {
        const videos = ids(`v${i}-`, 60);
        const chunks = [videos.slice(0, 20), videos.slice(20, 40), videos.slice(40)];
        return chunks.map(async (chunk, k) => {
          await pool.sql.begin(async (tx) => {
            await landItems(
              tx,
              jobId,
              [
                ...chunk.slice(0, 14).map(landed),
                ...chunk.slice(14, 16).map((v) => failed(v, k % 2 === 0 ? 'not-found' : 'forbidden')),
                ...chunk.slice(16, 18).map(retryable),
                ...chunk.slice(18).map((v) => quarantined(v, 'schema')),
              ],
              5,
            );
          });
          await pool.sql.begin(async (tx) => {
            await markSunk(tx, jobId, chunk.slice(0, 12));
            await markRetryableTakenUp(tx, 'video', null, 'job-c-resubmit', chunk.slice(16, 17));
            await markQuarantined(
              tx,
              jobId,
              chunk.slice(12, 14).map((videoId) => ({ videoId, reason: 'odd', reasonCode: 'unstorable' as const })),
            );
          });
        });
      });
      const outcomes = await Promise.allSettled(work);
      // a deadlock (40P01) would fail one of them
      expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
      await expectItemCountersExact();
      const [sunk] = await database.sql<{ n: number }[]>`select sum(n)::int as n from item_counts where state = 'sunk'`;
      expect(sunk!.n).toBe(24 * 3 * 12);
      expect((await itemStateCounts(database.sql)).retryablePending).toBe(24 * 3 * 1);
    } finally {
      await pool.close();
    }
  });
});

/**
 * A new database with the committed migrations applied up to `lastTag`, by drizzle's migrator
 * on a copy of the folder whose journal ends there. Returns how many it applied.
 */
async function databaseUpTo(lastTag: string): Promise<{ name: string; url: string; applied: number }> {
  const name = testDatabaseName('counters_upgrade');
  const url = testServerUrl(name);
  await ensureDatabase(url);
  const dir = mkdtempSync(join(tmpdir(), 'vsi-migrations-'));
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta/_journal.json'), 'utf8')) as {
      entries: { tag: string }[];
    };
    const applied = journal.entries.findIndex((e) => e.tag === lastTag) + 1;
    expect(applied, lastTag).toBeGreaterThan(0);
    journal.entries = journal.entries.slice(0, applied);
    mkdirSync(join(dir, 'meta'));
    writeFileSync(join(dir, 'meta/_journal.json'), JSON.stringify(journal));
    for (const e of journal.entries) copyFileSync(join(MIGRATIONS_FOLDER, `${e.tag}.sql`), join(dir, `${e.tag}.sql`));
    await migrate(drizzle(client), {
      migrationsFolder: dir,
      migrationsSchema: 'drizzle',
      migrationsTable: '__drizzle_migrations',
    });
    return { name, url, applied };
  } finally {
    await client.end({ timeout: 5 });
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('migration 0006 (item_counts.pending)', () => {
  const LAST_WITHOUT_PENDING = '0005_retention_and_scale';

  it('recounts item_counts from the items of a database at 0005, pending ones apart', async () => {
    const { name, url, applied } = await databaseUpTo(LAST_WITHOUT_PENDING);
    const handle = createDb(url, { max: 2 });
    try {
      const { sql } = handle;
      for (const j of ['job-m1', 'job-m2', 'job-m3']) await batch(j, 'video', null, sql);
      await landItems(sql, 'job-m1', [...ids('m1r', 10).map(retryable), ...ids('m1l', 5).map(landed)]);
      await landItems(sql, 'job-m2', [
        ...ids('m2r', 8).map(retryable),
        ...ids('m2f', 3).map((v) => failed(v, 'not-found')),
        quarantined('m2q', 'schema'),
      ]);
      await markRetryableTakenUp(sql, 'video', null, 'job-m3', ids('m1r', 4));
      // a counter that drifted under 0005 (edited by hand): a recount does not carry it over
      await sql`update item_counts set n = n + 7 where state = 'landed'`;

      const r = await migrateDatabase(url);
      expect(r.applied).toBe(committedMigrations().length - applied);
      expect((await itemStateCounts(sql)).retryablePending).toBe(6 + 8);
      await expectItemCountersExact(sql);
      // the 5-array function of 0005 is gone; the triggers keep the new key from here on
      expect(await sql`select pronargs from pg_proc where proname = 'batch_item_counts_add'`).toEqual([
        { pronargs: 6 },
      ]);
      await markRetryableTakenUp(sql, 'video', null, 'job-m3', ids('m2r', 3));
      expect((await itemStateCounts(sql)).retryablePending).toBe(6 + 5);
      await expectItemCountersExact(sql);
    } finally {
      await handle.close();
      await dropDatabase(name);
    }
  });

  it('waits for a writer in the middle of a transaction instead of deadlocking with it', async () => {
    const { name, url } = await databaseUpTo(LAST_WITHOUT_PENDING);
    const handle = createDb(url, { max: 2 });
    try {
      const { sql } = handle;
      await batch('job-w', 'video', null, sql);
      await landItems(sql, 'job-w', ids('w', 6).map(landed));
      await markSunk(sql, 'job-w', ids('w', 6));
      const writer = await sql.reserve();
      try {
        // the writer holds batch_items but has written no counter yet (a prune's first statement
        // changes no key); its next statement lands items, whose trigger writes item_counts
        await writer`begin`;
        await writer`update batch_items set payload = null, payload_pruned_at = now() where job_id = 'job-w'`;
        const migrating = migrateDatabase(url);
        const waiting = async () => {
          const [row] = await sql<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity where datname = ${name} and wait_event_type = 'Lock'`;
          return row!.n;
        };
        const deadline = Date.now() + 10_000;
        while ((await waiting()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
        expect(await waiting(), 'the migration waits for the writer').toBe(1);
        await landItems(writer, 'job-w', ids('wr', 5).map(retryable));
        await writer`commit`;
        await migrating;
      } finally {
        writer.release();
      }
      expect((await itemStateCounts(sql)).retryablePending).toBe(5);
      await expectItemCountersExact(sql);
    } finally {
      await handle.close();
      await dropDatabase(name);
    }
  });
});

describe('source stats', () => {
  it('equal a fresh count after listings, stored videos and transcripts, overlaps, deletes and truncation', async () => {
    const { sql } = database;
    const [s1, s2, s3] = [await addSource('PL1'), await addSource('PL2'), await addSource('PL3')];
    // a source has its row from the start
    await expectSourceStatsExact();

    // listings (new members, then the same ones listed again), overlapping sources
    await rememberVideos(sql, s1, ids('x', 30));
    await rememberVideos(sql, s2, ids('x', 10).concat(ids('y', 20)));
    await expectSourceStatsExact();

    // the sink stores videos and transcripts (some twice: the upsert updates, nothing is counted twice)
    await storeVideos(ids('x', 20));
    await storeVideos(ids('x', 25));
    await storeTranscripts(ids('x', 15), 'en');
    await storeTranscripts(ids('x', 5), 'de');
    await storeTranscripts(ids('x', 15), 'en');
    await expectSourceStatsExact();
    const read = new Map((await sourcesWithStats(sql)).map((s) => [s.id, s]));
    expect(read.get(s1)).toMatchObject({ videos: 25, transcripts: 20 });
    expect(read.get(s2)).toMatchObject({ videos: 10, transcripts: 15 });

    // a video stored before its source lists it: joining brings it (and its transcripts) along
    await storeVideos(ids('z', 8));
    await storeTranscripts(ids('z', 4), 'en');
    await addSourceVideos(sql, s3, ids('z', 8));
    await rememberVideos(sql, s3, ids('x', 3), false);
    await expectSourceStatsExact();

    // deletes: a member, a video, a transcript; then truncations
    await sql`delete from source_videos where source_id = ${s1} and video_id = any(${ids('x', 2)}::text[])`;
    await sql`delete from videos where id = ${'x0005'}`;
    await sql`delete from transcripts where video_id = ${'x0006'} and lang = 'en'`;
    await expectSourceStatsExact();
    await sql`delete from sources where id = ${s2}`;
    await expectSourceStatsExact();
    await sql`truncate transcripts`;
    await expectSourceStatsExact();
    await storeTranscripts(ids('x', 10), 'en');
    await sql`truncate videos`;
    await expectSourceStatsExact();
    await sql`truncate source_videos`;
    await expectSourceStatsExact();
  });

  it('a video stored while another transaction first lists it is counted again by the next listing', async () => {
    const { sql } = database;
    const s = await addSource('PL-race');
    const pool = createDb(database.url, { max: 2 });
    try {
      // the sink stores x0 (uncommitted) while the listing names x0 for the first time and
      // commits: neither sees the other's row, so neither counts it
      const reserved = await pool.sql.reserve();
      try {
        await reserved`begin`;
        await reserved`insert into videos (id) values ('race0')`;
        await rememberVideos(sql, s, ['race0']);
        await reserved`commit`;
      } finally {
        reserved.release();
      }
      const [missed] = await sourcesWithStats(sql);
      expect(missed!.videos).toBe(0);
      // the next sync lists it again: the source is counted from scratch
      await rememberVideos(sql, s, ['race0']);
      await expectSourceStatsExact();
      const [healed] = await sourcesWithStats(sql);
      expect(healed!.videos).toBe(1);
    } finally {
      await pool.close();
    }
  });
});

describe('batch counters', () => {
  /** batch_counts equals a fresh count and sum per status, and what status and /metrics read says the same. */
  async function expectBatchCountersExact(): Promise<void> {
    const { sql } = database;
    const fresh = await sql`
      select (abs(hashtext(job_id)) % ${BATCH_COUNT_SHARDS})::int as shard, status, count(*)::int as batches,
        sum(credits_estimated)::int as credits
      from batches group by 1, 2 order by 1, 2`;
    const kept = await sql`
      select shard::int, status, batches::int, credits_estimated::int as credits
      from batch_counts where batches <> 0 or credits_estimated <> 0 order by 1, 2`;
    expect(kept).toEqual(fresh);
    const byStatus = Object.fromEntries(
      (await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from batches group by status`).map(
        (r) => [r.status, r.n],
      ),
    );
    expect(await batchCountsByStatus(sql)).toEqual(byStatus);
    const [total] = await sql<{ n: number }[]>`select coalesce(sum(credits_estimated), 0)::int as n from batches`;
    expect(await creditsEstimatedTotal(sql)).toBe(total!.n);
  }

  it('equal a fresh count after submissions, polls, corrected estimates, ends, deletes and truncation', async () => {
    const { sql } = database;
    for (const id of ids('job-', 40)) await batch(id, id.endsWith('3') ? 'transcript' : 'video');
    await expectBatchCountersExact();
    // a poll that changes nothing, one that moves a batch on, a corrected estimate, the end
    await sql`update batches set polls = polls + 1`;
    await sql`update batches set status = 'active' where job_id < 'job-0020'`;
    await sql`update batches set credits_estimated = 3 where job_id in ('job-0001', 'job-0030')`;
    await sql`update batches set status = 'completed', terminal_at = now() where job_id < 'job-0010'`;
    await sql`update batches set status = 'expired', terminal_at = now(), credits_estimated = 0 where job_id = 'job-0035'`;
    await expectBatchCountersExact();
    await sql`delete from batches where job_id in ('job-0002', 'job-0021', 'job-0039')`;
    await expectBatchCountersExact();
    await sql`truncate batches cascade`;
    await expectBatchCountersExact();
    expect(await batchCountsByStatus(sql)).toEqual({});
  });
});

/** video_outcome_counts summed over shards equals a fresh count of video_sync; the readers agree. */
async function expectOutcomeCountersExact(sql: Queryable = database.sql): Promise<void> {
  const fresh = await sql`
    select kind, lang, coalesce(last_state, '') as state, coalesce(last_error_code, '') as error_code,
      coalesce(delivered_lang, '') as delivered_lang, count(*)::int as n
    from video_sync group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5`;
  const kept = await sql`
    select kind, lang, state, error_code, delivered_lang, sum(n)::int as n from video_outcome_counts
    group by 1, 2, 3, 4, 5 having sum(n) <> 0 order by 1, 2, 3, 4, 5`;
  expect(kept).toEqual(fresh);
  for (const c of await outcomeCounts(sql)) {
    const rows = await sql<{ state: string; n: number }[]>`
      select last_state as state, count(*)::int as n from video_sync where kind = ${c.kind} and lang = ${c.lang} group by 1`;
    for (const [state, n] of Object.entries(c.byState))
      expect(n, `${c.kind} ${c.lang} ${state}`).toBe(rows.find((r) => r.state === state)?.n ?? 0);
  }
  // an unfinished item's `processing` code is not an error: in flight, not listed
  const errors = await sql`
    select kind, lang, last_error_code as "errorCode", last_state as state, count(*)::int as videos from video_sync
    where last_error_code is not null and last_state <> 'processing' group by 1, 2, 3, 4 order by videos desc, 3, 1, 2, 4`;
  expect(await outcomeErrorCounts(sql)).toEqual(errors);
}

describe('video outcome counters (migrations/0008)', () => {
  const outcome =
    (state: 'sunk' | 'failed' | 'retryable' | 'landed', errorCode: string | null = null, deliveredLang?: string) =>
    (videoId: string) => ({ videoId, state, errorCode, deliveredLang });

  it('equal a fresh count after claims, outcomes, the sink, re-claims, releases, deletes and truncation', async () => {
    const { sql } = database;
    const vids = ids('v', 30);
    await claimVideos(sql, { kind: 'transcript', lang: 'de', textOnly: false, submission: 1 }, vids);
    await claimVideos(sql, { kind: 'video', lang: null, textOnly: false, submission: 2 }, vids.slice(0, 20));
    await expectOutcomeCountersExact();
    await pointClaimsAt(sql, 1, 'job-t1');
    await pointClaimsAt(sql, 2, 'job-v1');
    await expectOutcomeCountersExact();
    const t1 = { jobId: 'job-t1', kind: 'transcript' as const, lang: 'de' };
    await recordOutcomes(sql, t1, vids.slice(0, 10).map(outcome('sunk', null, 'de')), 60_000);
    await recordOutcomes(sql, t1, vids.slice(10, 15).map(outcome('sunk', null, 'en')), 60_000);
    await recordOutcomes(sql, t1, vids.slice(15, 18).map(outcome('failed', 'transcript-unavailable')), 60_000);
    await recordOutcomes(sql, t1, vids.slice(18, 24).map(outcome('retryable', 'internal-error')), 60_000);
    await recordOutcomes(sql, t1, vids.slice(24, 27).map(outcome('landed')), 60_000);
    await recordOutcomes(sql, t1, [{ videoId: vids[27]!, state: 'processing', errorCode: 'processing' }], 60_000);
    expect((await outcomeErrorCounts(sql)).map((e) => e.errorCode)).not.toContain('processing');
    await recordOutcomes(
      sql,
      { jobId: 'job-v1', kind: 'video', lang: null },
      vids.slice(0, 20).map(outcome('sunk')),
      60_000,
    );
    await expectOutcomeCountersExact();
    // the sink stores the landed ones, one of them in another language
    await markSinkOutcome(sql, 'job-t1', vids.slice(24, 27), 'sunk', ['de', 'de', 'fr']);
    await expectOutcomeCountersExact();
    const [de] = await languageCoverage(sql);
    expect(de).toEqual({ lang: 'de', asked: 12, fellBack: { en: 5, fr: 1 }, none: 3, pending: 9 });
    // the retryable ones re-submitted (a claim), then stored; a refused POST releases its claim
    await claimVideos(sql, { kind: 'transcript', lang: 'de', textOnly: false, submission: 3 }, vids.slice(18, 24));
    await expectOutcomeCountersExact();
    expect((await outcomeErrorCounts(sql)).filter((e) => e.errorCode === 'internal-error')).toEqual([]);
    await pointClaimsAt(sql, 3, 'job-t2');
    await recordOutcomes(sql, { ...t1, jobId: 'job-t2' }, vids.slice(18, 24).map(outcome('sunk', null, 'de')), 60_000);
    await releaseClaims(sql, 99);
    await expectOutcomeCountersExact();
    expect((await languageCoverage(sql))[0]).toEqual({
      lang: 'de',
      asked: 18,
      fellBack: { en: 5, fr: 1 },
      none: 3,
      pending: 3,
    });
    // per source: its own videos only, never bought ones pending
    const [src] = await sql<
      { id: number }[]
    >`insert into sources (kind, ref, external_id, max_videos, langs) values ('playlist', 'p', 'p', 100, '{de}') returning id`;
    await sql`insert into source_videos (source_id, video_id) select ${src!.id}, v from unnest(${[...vids.slice(8, 16), 'never-bought']}::text[]) as v`;
    expect(await sourceLanguageCoverage(sql, [src!.id])).toEqual([
      { sourceId: src!.id, lang: 'de', asked: 2, fellBack: { en: 5 }, none: 1, pending: 1 },
    ]);
    // the overview's read of a page: the same coverage, and each source's errors in what it buys
    // (another source's language is not its error)
    const [other] = await sql<
      { id: number }[]
    >`insert into sources (kind, ref, external_id, max_videos, langs) values ('playlist', 'q', 'q', 100, '{en}') returning id`;
    await sql`insert into source_videos (source_id, video_id) select ${other!.id}, v from unnest(${vids.slice(14, 20)}::text[]) as v`;
    expect(await sourceOutcomes(sql, [src!.id, other!.id])).toEqual({
      coverage: [
        { sourceId: src!.id, lang: 'de', asked: 2, fellBack: { en: 5 }, none: 1, pending: 1 },
        { sourceId: other!.id, lang: 'en', asked: 0, fellBack: {}, none: 0, pending: 6 },
      ],
      errors: [
        {
          sourceId: src!.id,
          kind: 'transcript',
          lang: 'de',
          errorCode: 'transcript-unavailable',
          state: 'failed',
          videos: 1,
        },
      ],
    });
    await sql`delete from video_sync where video_id in ('v0001', 'v0012')`;
    await expectOutcomeCountersExact();
    await sql`truncate video_sync`;
    await expectOutcomeCountersExact();
    expect(await outcomeCounts(sql)).toEqual([]);
  });

  it('stay exact under concurrent transactions writing outcomes of the same keys', async () => {
    const pool = createDb(database.url, { max: 6 });
    try {
      const { sql } = pool;
      await Promise.all(
        Array.from({ length: 6 }, (_, w) =>
          sql.begin(async (tx) => {
            const vids = ids(`w${w}-`, 200);
            await claimVideos(tx, { kind: 'transcript', lang: 'en', textOnly: false, submission: 100 + w }, vids);
            await pointClaimsAt(tx, 100 + w, `job-c${w}`);
            await recordOutcomes(
              tx,
              { jobId: `job-c${w}`, kind: 'transcript', lang: 'en' },
              vids.map(outcome('sunk', null, 'en')),
              60_000,
            );
          }),
        ),
      );
      await expectOutcomeCountersExact(sql);
      expect((await languageCoverage(sql))[0]).toMatchObject({ lang: 'en', asked: 1200 });
    } finally {
      await pool.close();
    }
  });
});

describe('migration 0008 (video_outcome_counts, video_sync.delivered_lang)', () => {
  it('fills delivered_lang from the transcripts stored and counts what video_sync holds', async () => {
    const { name, url } = await databaseUpTo('0007_holds_by_key');
    const client = postgres(url, { max: 1, onnotice: () => {} });
    try {
      // a fallback (asked de, stored en), a delivery in the language, a default-language one, a failure
      await client`
        insert into video_sync (video_id, kind, lang, last_job_id, last_state, last_error_code, attempts) values
          ('a', 'transcript', 'de', 'j1', 'sunk', null, 1), ('b', 'transcript', 'de', 'j1', 'sunk', null, 1),
          ('c', 'transcript', '', 'j2', 'sunk', null, 1), ('d', 'transcript', 'de', 'j1', 'failed', 'transcript-unavailable', 1),
          ('a', 'video', '', 'j3', 'sunk', null, 1)`;
      await client`
        insert into transcripts (video_id, lang, text, content_sha256, last_job_id) values
          ('a', 'en', 'x', 'h1', 'j1'), ('b', 'de', 'x', 'h2', 'j1'), ('b', 'en', 'x', 'h3', 'j9'), ('c', 'fr', 'x', 'h4', 'j2')`;
      await migrateDatabase(url);
      expect(await client`select video_id, kind, delivered_lang from video_sync order by 1, 2`).toEqual([
        { video_id: 'a', kind: 'transcript', delivered_lang: 'en' },
        { video_id: 'a', kind: 'video', delivered_lang: null },
        { video_id: 'b', kind: 'transcript', delivered_lang: 'de' },
        { video_id: 'c', kind: 'transcript', delivered_lang: 'fr' },
        { video_id: 'd', kind: 'transcript', delivered_lang: null },
      ]);
      expect(await languageCoverage(client)).toEqual([
        { lang: 'de', asked: 1, fellBack: { en: 1 }, none: 1, pending: 0 },
      ]);
      await expectOutcomeCountersExact(client);
    } finally {
      await client.end({ timeout: 5 });
      await dropDatabase(name);
    }
  });
});

describe('page counters', () => {
  const page = (url: string, content: string): PageRow => ({
    url,
    name: null,
    description: null,
    ogUrl: null,
    content,
    countCharacters: content.length,
    sha256: pageSha256(content),
  });
  const site = (prefix: string, n: number, version: string) =>
    ids(prefix, n).map((id) => page(`https://docs.test/${id}`, `# ${id}\n\n${version}`));

  /** The counters equal a fresh count of `pages` and `page_versions`, and so do their readers. */
  async function expectPageCountersExact(): Promise<{ stored: number; gone: number; versions: number }> {
    const { sql } = database;
    const [fresh] = await sql<{ stored: number; gone: number; versions: number }[]>`
      select (select count(*)::int from pages) as stored,
        (select count(*)::int from pages where gone_at is not null) as gone,
        (select count(*)::int from page_versions) as versions`;
    expect(await pageTotals(sql)).toEqual(fresh);
    expect(await pageCounts(sql)).toEqual({ stored: fresh!.stored, gone: fresh!.gone });
    return fresh!;
  }

  beforeEach(async () => {
    // page_versions is a view since migrations/0033; its rows are in page_version_rows
    await database.sql`truncate pages, page_version_rows, page_sections, source_pages`;
  });

  it('equal a fresh count after pages stored, changed, gone, returned, deleted and truncated', async () => {
    const { sql } = database;
    const [web] = await sql<{ id: number }[]>`
      insert into sources (kind, ref, external_id, max_videos) values ('website', 'https://docs.test/', 'https://docs.test/', 100)
      returning id`;
    const origin = { jobId: 'crawl-1', sourceId: web!.id };
    expect(await expectPageCountersExact()).toEqual({ stored: 0, gone: 0, versions: 0 });

    // a first crawl, then the same pages again (nothing new) and with 10 of them changed
    await sql.begin((tx) => storePages(tx, origin, site('p', 30, 'v1')));
    expect(await expectPageCountersExact()).toEqual({ stored: 30, gone: 0, versions: 30 });
    await sql.begin((tx) => storePages(tx, origin, site('p', 30, 'v1')));
    await sql.begin((tx) => storePages(tx, origin, [...site('p', 10, 'v2'), ...site('p', 30, 'v1').slice(10)]));
    expect(await expectPageCountersExact()).toEqual({ stored: 30, gone: 0, versions: 40 });

    // a crawl that finds 20 of them: 10 gone; then 4 of those return, changed
    await sql.begin((tx) =>
      markPagesGone(
        tx,
        origin,
        site('p', 20, 'v2').map((p) => p.url),
      ),
    );
    expect(await expectPageCountersExact()).toEqual({ stored: 30, gone: 10, versions: 40 });
    await sql.begin((tx) => storePages(tx, origin, site('p', 24, 'v2').slice(20)));
    expect(await expectPageCountersExact()).toEqual({ stored: 30, gone: 6, versions: 44 });

    // writers side by side on the pool's connections (other shards), each in its own transaction
    await Promise.all(
      ['a', 'b', 'c', 'd'].map((prefix) => sql.begin((tx) => storePages(tx, origin, site(prefix, 25, 'v1')))),
    );
    expect(await expectPageCountersExact()).toEqual({ stored: 130, gone: 6, versions: 144 });

    // deletes by hand (a gone page among them), then truncations
    await sql`delete from pages where url = any(${site('p', 30, 'v1')
      .slice(25)
      .map((p) => p.url)}::text[])`;
    await sql`delete from page_versions where url = ${'https://docs.test/a0000'}`;
    expect(await expectPageCountersExact()).toEqual({ stored: 125, gone: 1, versions: 143 });
    await sql`truncate page_version_rows`;
    expect(await expectPageCountersExact()).toEqual({ stored: 125, gone: 1, versions: 0 });
    await sql`truncate pages`;
    expect(await expectPageCountersExact()).toEqual({ stored: 0, gone: 0, versions: 0 });
    await sql.begin((tx) => storePages(tx, origin, site('e', 5, 'v1')));
    expect(await expectPageCountersExact()).toEqual({ stored: 5, gone: 0, versions: 5 });
  });
});

describe('media counters', () => {
  const origin = { jobId: 'media-1', sourceId: null };
  const clip = (n: number, type = 'video', platform = 'tiktok') =>
    mediaRowFromApi(`https://www.${platform}.com/@a/video/${n}`, {
      platform,
      type,
      id: String(n),
      title: `clip ${n}`,
      ...(type === 'video' ? { media: { type: 'video', duration: 30 } } : {}),
    });
  const rowOf = (r: ReturnType<typeof clip>) => {
    if (!('row' in r)) throw new Error(r.reason);
    return r.row;
  };

  /** The counters equal a fresh count of `media` by platform and state, and so does `status`'s reader. */
  async function expectMediaCountersExact(sql: Queryable = database.sql): Promise<MediaTotals> {
    const fresh = await sql<{ platform: string; transcriptState: string; n: number }[]>`
      select platform, transcript_state as "transcriptState", count(*)::float8 as n from media
      group by 1, 2 order by 1, 2`;
    expect(await mediaCounts(sql)).toEqual(fresh);
    const [t] = await sql<MediaTotals[]>`
      select count(*)::int as stored,
        count(*) filter (where transcript_state = 'stored')::int as transcripts,
        count(*) filter (where transcript_state = 'empty')::int as empty,
        count(*) filter (where transcript_state = 'pending')::int as pending,
        count(*) filter (where transcript_state in ('failed', 'expired', 'retry', 'over-budget'))::int as failed
      from media`;
    expect(await mediaTotals(sql)).toEqual(t);
    return t!;
  }

  beforeEach(async () => {
    await database.sql`truncate media, media_segments, source_media`;
  });

  it('equal a fresh count after media stored, transcribed, refused, deleted and truncated', async () => {
    const { sql } = database;
    expect(await expectMediaCountersExact()).toEqual({ stored: 0, transcripts: 0, empty: 0, pending: 0, failed: 0 });

    // 20 videos and 5 images on two platforms; the same metadata again changes nothing
    const batch1 = [
      ...Array.from({ length: 15 }, (_, i) => clip(i)),
      ...Array.from({ length: 5 }, (_, i) => clip(100 + i, 'video', 'instagram')),
      ...Array.from({ length: 5 }, (_, i) => clip(200 + i, 'image', 'instagram')),
    ].map(rowOf);
    await sql.begin(async (tx) => {
      for (const r of batch1) await storeMediaMetadata(tx, origin, r);
    });
    await sql.begin(async (tx) => {
      for (const r of batch1) await storeMediaMetadata(tx, origin, r);
    });
    expect(await expectMediaCountersExact()).toEqual({ stored: 25, transcripts: 0, empty: 0, pending: 0, failed: 20 });

    // transcripts: 8 pending, then 5 of them stored and 1 empty, 2 failed
    const urls = batch1.slice(0, 8).map((r) => r.url);
    for (const u of urls) await setMediaTranscriptState(sql, u, 'pending', { attempt: true });
    await sql.begin(async (tx) => {
      for (const u of urls.slice(0, 5))
        await storeMediaTranscript(tx, origin, u, {
          content: [{ text: 'hello', offset: 0 }],
          lang: 'en',
          mode: 'native',
        });
      await storeMediaTranscript(tx, origin, urls[5]!, { content: [], lang: 'en', mode: 'native' });
      for (const u of urls.slice(6)) await setMediaTranscriptState(tx, u, 'failed', { reason: 'refused' });
    });
    expect(await expectMediaCountersExact()).toEqual({ stored: 25, transcripts: 5, empty: 1, pending: 0, failed: 14 });

    // writers side by side on the pool's connections (other shards), an unavailable URL among them
    await Promise.all(
      ['tiktok', 'twitter', 'facebook'].map((platform, k) =>
        sql.begin(async (tx) => {
          for (let i = 0; i < 10; i++)
            await storeMediaMetadata(tx, origin, rowOf(clip(1000 * (k + 1) + i, 'video', platform)));
          await storeUnavailableMedia(tx, origin, `https://www.${platform}.com/@gone/video/1`, 'not-found');
        }),
      ),
    );
    expect(await expectMediaCountersExact()).toEqual({ stored: 58, transcripts: 5, empty: 1, pending: 0, failed: 44 });
    expect(await sql`select distinct shard from media_counts`).not.toHaveLength(0);

    // one update moving many rows, deletes by hand, then a truncation
    await sql`update media set transcript_state = 'over-budget' where platform = 'twitter' and type = 'video'`;
    await sql`delete from media where platform = 'facebook' or url = ${urls[0]!}`;
    expect(await expectMediaCountersExact()).toEqual({ stored: 46, transcripts: 4, empty: 1, pending: 0, failed: 34 });
    await sql`truncate media`;
    expect(await expectMediaCountersExact()).toEqual({ stored: 0, transcripts: 0, empty: 0, pending: 0, failed: 0 });
    await sql.begin((tx) => storeMediaMetadata(tx, origin, rowOf(clip(1))));
    expect(await expectMediaCountersExact()).toEqual({ stored: 1, transcripts: 0, empty: 0, pending: 0, failed: 1 });
  });

  it('two writers on one shard touching its rows in opposite orders queue, never deadlock', async () => {
    const { sql } = database;
    const tiktok = (n: number) => rowOf(clip(9000 + n));
    for (const n of [1, 2]) await sql.begin((tx) => storeMediaMetadata(tx, origin, tiktok(n)));
    for (const n of [1, 2]) await setMediaTranscriptState(sql, tiktok(n).url, 'pending');
    // two connections whose backends count in the same shard (17 connections hold a pair)
    const opened: { c: postgres.Sql; pid: number }[] = [];
    try {
      let pair: { c: postgres.Sql; pid: number }[] | undefined;
      while (pair === undefined) {
        const c = postgres(database.url, { max: 1, onnotice: () => {} });
        const [row] = await c<{ pid: number }[]>`select pg_backend_pid() as pid`;
        const mine = { c, pid: row!.pid };
        const other = opened.find((o) => o.pid % MEDIA_COUNT_SHARDS === mine.pid % MEDIA_COUNT_SHARDS);
        opened.push(mine);
        if (other) pair = [other, mine];
      }
      const [{ c: a }, { c: b, pid: bPid }] = pair as [
        { c: postgres.Sql; pid: number },
        { c: postgres.Sql; pid: number },
      ];
      await a`begin`;
      await b`begin`;
      // A: a new item (its shard's tiktok/retry row); B: an item pending -> stored (tiktok/pending
      // and tiktok/stored), then a new item (tiktok/retry, A's); A: its pending -> stored (B's)
      await storeMediaMetadata(a, origin, tiktok(3));
      let bFirstDone = false;
      const bSide = (async () => {
        await setMediaTranscriptState(b, tiktok(1).url, 'stored');
        bFirstDone = true;
        await storeMediaMetadata(b, origin, tiktok(4));
        await b`commit`;
      })();
      // B has run its first statement, or waits for A: either way A's next one comes after it
      for (const deadline = Date.now() + 30_000; !bFirstDone;) {
        const [w] = await sql<{ waiting: boolean }[]>`
          select coalesce(wait_event_type = 'Lock', false) as waiting from pg_stat_activity where pid = ${bPid}`;
        if (w?.waiting) break;
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((r) => setImmediate(r));
      }
      await setMediaTranscriptState(a, tiktok(2).url, 'stored');
      await a`commit`;
      await bSide;
      expect(await expectMediaCountersExact()).toMatchObject({ stored: 4, transcripts: 2, failed: 2 });
    } finally {
      await Promise.all(opened.map((o) => o.c.end({ timeout: 5 })));
    }
  });

  it('a database of 0021 holding media is counted exactly by the migration', async () => {
    const { name, url, applied } = await databaseUpTo('0021_media');
    const handle = createDb(url, { max: 2 });
    try {
      const { sql } = handle;
      await sql.begin(async (tx) => {
        for (let i = 0; i < 12; i++) await storeMediaMetadata(tx, origin, rowOf(clip(i, i < 9 ? 'video' : 'carousel')));
      });
      await sql`update media set transcript_state = 'stored' where url in (select url from media where type = 'video' limit 4)`;
      const r = await migrateDatabase(url);
      expect(r.applied).toBe(committedMigrations().length - applied);
      expect(await expectMediaCountersExact(sql)).toEqual({
        stored: 12,
        transcripts: 4,
        empty: 0,
        pending: 0,
        failed: 5,
      });
    } finally {
      await handle.close();
      await dropDatabase(name);
    }
  });
});
