/**
 * `replay --quarantined` as a real process, and the quarantine counts of `status` and `/metrics`.
 * The rows are written directly, as an older, stricter version left them: items quarantined for
 * the schema whose raw copy today's schema accepts, one still invalid, a duplicate copy, a
 * too-large prefix, one Postgres cannot store, and a legacy row without a reason code. The API
 * base URL points at a closed port: any API call would fail the command. Every test starts from
 * these rows, written afresh, and runs the replays it builds on itself.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/admin/metrics.ts';
import { startAdminServer, type AdminServer } from '../../src/admin/server.ts';
import { loadConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/log.ts';
import type { StatusReport } from '../../src/pipeline/read/status.ts';
import { closeRedis, createRedis, deletePrefixKeys } from '../../src/queues/connection.ts';
import { createQueues, type PipelineQueues } from '../../src/queues/queues.ts';
import { parseMetrics, value, type Sample } from '../helpers/admin.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli, type CliResult } from '../helpers/pipeline.ts';

const TOKEN = 'replay-quarantined-token-0123456789';
const VIDEO_JOB = 'job-quarantine-video';
const TRANSCRIPT_JOB = 'job-quarantine-transcript';

let database: TestDatabase;
let redis: Redis;
let prefix: string;
let queues: PipelineQueues;
let admin: AdminServer;
let env: Record<string, string>;

const cli = (args: string[]): Promise<CliResult> => runCli(args, env, 60_000);

function video(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    title: `title of ${id}`,
    description: '',
    duration: 61,
    channel: { id: 'UCquarantine', name: 'Quarantine channel' },
    tags: ['a'],
    transcriptLanguages: ['en'],
    ...extra,
  };
}

interface ItemRow {
  jobId: string;
  videoId: string;
  payload?: unknown;
  payloadRaw?: string;
  reason: string;
  reasonCode: string | null;
  state?: string;
}

async function insertItem(r: ItemRow): Promise<void> {
  const payload = r.payload === undefined ? null : JSON.stringify(r.payload);
  await database.sql`
    insert into batch_items (job_id, video_id, state, payload, payload_raw, reason, reason_code, landed_at, sunk_at)
    values (${r.jobId}, ${r.videoId}, ${r.state ?? 'quarantined'}, ${payload}::text::jsonb, ${r.payloadRaw ?? null},
      ${r.reason}, ${r.reasonCode}, ${r.state === 'sunk' ? new Date() : null}, ${r.state === 'sunk' ? new Date() : null})`;
}

async function items(): Promise<
  Record<string, { state: string; error_code: string | null; reason: string | null; reason_code: string | null }>
> {
  const rows = await database.sql<
    { video_id: string; state: string; error_code: string | null; reason: string | null; reason_code: string | null }[]
  >`
    select video_id, state, error_code, reason, reason_code from batch_items order by job_id, video_id`;
  return Object.fromEntries(rows.map(({ video_id, ...rest }) => [video_id, rest]));
}

/** Everything replay may write, to prove a dry run writes nothing. */
async function snapshot(): Promise<unknown> {
  return {
    items: await database.sql`select * from batch_items order by job_id, video_id`,
    videos: await database.sql`select * from videos order by id`,
    transcripts: await database.sql`select * from transcripts order by video_id, lang`,
    sync: await database.sql`select * from video_sync order by video_id, kind, lang`,
  };
}

async function scrape(): Promise<Sample[]> {
  const res = await fetch(`${admin.url}/metrics`);
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

async function statusJson(): Promise<StatusReport> {
  const r = await cli(['status', '--json']);
  expectExit(r, 0);
  return JSON.parse(r.stdout) as StatusReport;
}

beforeAll(async () => {
  database = await createTestDatabase('replay_quarantined');
  const config = loadConfig({});
  redis = createRedis(config.redisUrl);
  prefix = `{vsi-test-replayq-${randomBytes(4).toString('hex')}}`;
  queues = createQueues(redis, prefix);
  const metrics = createMetrics({ processMetrics: false });
  admin = await startAdminServer({
    port: 0,
    token: TOKEN,
    sql: database.sql,
    redis,
    queues,
    metrics,
    log: silentLogger(),
  });
  env = {
    DATABASE_URL: database.url,
    REDIS_URL: config.redisUrl,
    QUEUE_PREFIX: prefix,
    // nothing listens there: a command that called the API would fail
    API_BASE_URL: 'http://127.0.0.1:9/v1',
    API_KEY: 'not-used-by-replay-quarantined',
    LOG_LEVEL: 'warn',
  };
}, 60_000);

beforeEach(async () => {
  const sql = database.sql;
  await sql`truncate batch_items, batches, video_sync, videos, transcripts cascade`;
  await sql`
    insert into batches (job_id, kind, lang, status, total, succeeded, failed, credits_estimated, request, submitted_at, completed_at, terminal_at)
    values
      (${VIDEO_JOB}, 'video', null, 'completed', 7, 6, 0, 8, ${sql.json({ videoIds: [] })}, '2026-01-10T00:00:00Z', '2026-01-10T00:05:00Z', '2026-01-10T00:05:00Z'),
      (${TRANSCRIPT_JOB}, 'transcript', 'en', 'completed', 2, 1, 1, 3, ${sql.json({ videoIds: [] })}, '2026-02-01T00:00:00Z', '2026-02-01T00:05:00Z', '2026-02-01T00:05:00Z')`;
  const stricter =
    'item does not match the interface at video.viewCount: Invalid input: expected number, received null';
  await insertItem({
    jobId: VIDEO_JOB,
    videoId: 'vidSunk0001',
    payload: { videoId: 'vidSunk0001', video: video('vidSunk0001') },
    reason: '',
    reasonCode: null,
    state: 'sunk',
  });
  // valid today (null counts, an extra field): quarantined by a stricter version
  await insertItem({
    jobId: VIDEO_JOB,
    videoId: 'vidFixed001',
    payload: {
      videoId: 'vidFixed001',
      video: video('vidFixed001', { viewCount: null, likeCount: null, newField: { x: 1 } }),
    },
    reason: stricter,
    reasonCode: 'schema',
  });
  // its repeated copy in the same answer: never re-sunk (the first copy is the item)
  await insertItem({
    jobId: VIDEO_JOB,
    videoId: 'vidFixed001#3',
    payload: { videoId: 'vidFixed001', video: video('vidFixed001', { title: 'the second copy' }) },
    reason: 'videoId "vidFixed001" repeated in the answer (item #3); the first copy is the item',
    reasonCode: 'duplicate',
  });
  // still invalid today: duration is required
  await insertItem({
    jobId: VIDEO_JOB,
    videoId: 'vidBroken01',
    payload: { videoId: 'vidBroken01', video: video('vidBroken01', { duration: null }) },
    reason: 'an older wording of the reason',
    reasonCode: 'schema',
  });
  // quarantined before reason codes existed; its raw text only in payload_raw (read with JSON.parse)
  await insertItem({
    jobId: VIDEO_JOB,
    videoId: 'vidLegacy01',
    payloadRaw: JSON.stringify({ videoId: 'vidLegacy01', video: video('vidLegacy01', { viewCount: 1234 }) }),
    reason: 'quarantined by an old version',
    reasonCode: null,
  });
  // only a prefix was kept
  await insertItem({
    jobId: VIDEO_JOB,
    videoId: 'vidTooBig01',
    payloadRaw: '{"videoId":"vidTooBig01","video":{"id":"vidTooBig01","title":"aaaa',
    reason: 'item larger than ITEM_MAX_BYTES; its first bytes are kept',
    reasonCode: 'too-large',
  });
  // valid for the schema, but a bigint column cannot hold 1.5: the sink sets it aside again
  await insertItem({
    jobId: VIDEO_JOB,
    videoId: 'vidPoison01',
    payload: { videoId: 'vidPoison01', video: video('vidPoison01', { viewCount: 1.5 }) },
    reason: 'video.viewCount: 1.5 is not a whole number a bigint column holds exactly',
    reasonCode: 'unstorable',
  });
  // transcript batch: one now reads as a permanent errorCode, one as a transcript
  await insertItem({
    jobId: TRANSCRIPT_JOB,
    videoId: 'vidFixed001',
    payload: { videoId: 'vidFixed001', errorCode: 'not-found', transcript: null },
    reason: 'item does not match the interface at transcript: expected object',
    reasonCode: 'schema',
  });
  await insertItem({
    jobId: TRANSCRIPT_JOB,
    videoId: 'vidTrans001',
    payload: {
      videoId: 'vidTrans001',
      transcript: {
        content: [
          { text: 'hello', offset: 0, duration: 900 },
          { text: 'there', offset: 900, duration: 800 },
        ],
        lang: 'en',
        availableLangs: ['en', 'de'],
      },
    },
    reason: 'item does not match the interface at transcript.content[0].lang: required',
    reasonCode: 'schema',
  });
  // the scheduler's record: this batch is the latest word on these videos
  await sql`
    insert into video_sync (video_id, kind, lang, last_job_id, last_state, attempts)
    values ('vidFixed001', 'video', '', ${VIDEO_JOB}, 'quarantined', 1),
      ('vidBroken01', 'video', '', ${VIDEO_JOB}, 'quarantined', 1),
      ('vidFixed001', 'transcript', 'en', ${TRANSCRIPT_JOB}, 'quarantined', 1),
      ('vidTrans001', 'transcript', 'en', ${TRANSCRIPT_JOB}, 'quarantined', 1)`;
});

/** `replay --quarantined --batch` of the transcript batch: everything in it lands or fails. */
function replayTranscriptBatch(): Promise<CliResult> {
  return cli(['replay', '--quarantined', '--batch', TRANSCRIPT_JOB]);
}

/** The whole replay, after the transcript batch's: what a second run finds left. */
async function replayAfterTranscriptBatch(): Promise<void> {
  expectExit(await replayTranscriptBatch(), 0);
  expectExit(await cli(['replay', '--quarantined']), 1);
}

afterAll(async () => {
  await admin?.close();
  await queues?.close();
  if (redis) {
    await deletePrefixKeys(redis, prefix);
    await closeRedis(redis);
  }
  await database?.drop();
});

describe('replay --quarantined', () => {
  it('status and /metrics count quarantined items by reason', async () => {
    const [report, text, m] = await Promise.all([statusJson(), cli(['status']), scrape()]);
    // every quarantined item kept raw; videos whose latest outcome is quarantined (a repeated copy
    // or an item without a readable video ID is not a video of its own)
    expect(report.history.items.quarantined).toBe(8);
    expect(report.quarantined.total).toBe(8);
    const [latest] = await database.sql<
      { n: number }[]
    >`select count(*)::int as n from video_sync where last_state = 'quarantined'`;
    expect(report.items.quarantined).toBe(latest!.n);
    expect(report.quarantined.byReason).toEqual({
      schema: 4,
      'no-result': 0,
      duplicate: 1,
      'too-large': 1,
      unparsable: 0,
      unstorable: 1,
      unknown: 1,
    });
    expectExit(text, 0);
    expect(text.stdout).toMatch(/^Quarantined items .*: 8$/m);
    expect(text.stdout).toMatch(/^ {2}schema: 4 \(.*replay --quarantined/m);
    expect(text.stdout).toMatch(/^ {2}unknown: 1 \(.*replay --quarantined/m);
    expect(text.stdout).not.toMatch(/^ {2}no-result:/m);
    expect(value(m, 'vsi_batch_items_quarantined', { reason: 'schema' })).toBe(4);
    expect(value(m, 'vsi_batch_items_quarantined', { reason: 'unknown' })).toBe(1);
    expect(value(m, 'vsi_batch_items_quarantined', { reason: 'duplicate' })).toBe(1);
    expect(value(m, 'vsi_batch_items_quarantined', { reason: 'no-result' })).toBe(0);
  });

  it('rejects bad combinations, naming the flag; --help lists --quarantined', async () => {
    const [failed, yes, timeout, unknown, since, help] = await Promise.all([
      cli(['replay', '--quarantined', '--failed']),
      cli(['replay', '--quarantined', '--yes']),
      cli(['replay', '--quarantined', '--timeout', '5m']),
      cli(['replay', '--quarantined', '--batch', 'no-such-job']),
      cli(['replay', '--quarantined', '--since', 'last week']),
      cli(['replay', '--help']),
    ]);
    expectCleanError(failed, 2, '--quarantined cannot be combined with --failed');
    expectCleanError(yes, 2, '--yes');
    expectCleanError(timeout, 2, '--timeout');
    expectCleanError(unknown, 2, '--batch: no batch "no-such-job"');
    expectCleanError(since, 2, '--since', 'last week');
    expectExit(help, 0);
    expect(help.stdout).toMatch(/^ {2}--quarantined\s/m);
  });

  it('--dry-run prints what would happen, by reason and outcome, and changes nothing', async () => {
    const before = await snapshot();
    const [all, recent] = await Promise.all([
      cli(['replay', '--quarantined', '--dry-run']),
      cli(['replay', '--quarantined', '--dry-run', '--since', '2026-01-20']),
    ]);
    expectExit(all, 0);
    expect(all.stdout.trim().split('\n').at(-1)).toBe(
      'dry run: would re-sink 8 quarantined item(s) from raw (by reason: schema: 4, duplicate: 1, too-large: 1, unstorable: 1, unknown: 1): ' +
        '4 stored, 1 failed, 0 retryable, 1 still quarantined (schema: 1), 2 skipped (duplicate: 1, too-large: 1); nothing changed; no API call',
    );
    // the table: reason before → outcome
    expect(all.stdout).toMatch(/^schema\s+failed \(not-found\)\s+1\s*$/m);
    expect(all.stdout).toMatch(/^schema\s+quarantined \(schema\)\s+1\s*$/m);
    expect(all.stdout).toMatch(/^schema\s+stored\s+2\s*$/m);
    expect(all.stdout).toMatch(/^duplicate\s+skipped \(duplicate\)\s+1\s*$/m);
    expectExit(recent, 0);
    expect(recent.stdout).toMatch(
      /would re-sink 2 quarantined item\(s\) from raw \(by reason: schema: 2\): 1 stored, 1 failed, 0 retryable, 0 still quarantined, 0 skipped;/,
    );
    expect(await snapshot()).toEqual(before);
  });

  it('--batch narrows it to one batch: everything read again lands or fails, exit 0', async () => {
    const r = await replayTranscriptBatch();
    expectExit(r, 0);
    expect(r.stdout).toBe(
      're-sank 2 quarantined item(s) from raw: 1 stored (1 row(s) inserted, 0 updated, 0 unchanged), 1 failed, 0 retryable, ' +
        '0 still quarantined, 0 skipped; no API call\n',
    );
    const [t] = await database.sql<{ text: string; chunks: unknown[]; available_langs: string[] }[]>`
      select text, chunks, available_langs from transcripts where video_id = 'vidTrans001' and lang = 'en'`;
    expect(t).toMatchObject({ text: 'hello there', available_langs: ['en', 'de'] });
    expect(t!.chunks).toHaveLength(2);
    const it = await database.sql<
      {
        video_id: string;
        state: string;
        error_code: string | null;
        reason: string | null;
        reason_code: string | null;
      }[]
    >`
      select video_id, state, error_code, reason, reason_code from batch_items where job_id = ${TRANSCRIPT_JOB} order by video_id`;
    expect(it).toEqual([
      { video_id: 'vidFixed001', state: 'failed', error_code: 'not-found', reason: null, reason_code: null },
      { video_id: 'vidTrans001', state: 'sunk', error_code: null, reason: null, reason_code: null },
    ]);
    const sync = await database.sql<{ video_id: string; last_state: string; last_error_code: string | null }[]>`
      select video_id, last_state, last_error_code from video_sync where kind = 'transcript' order by video_id`;
    expect(sync).toEqual([
      { video_id: 'vidFixed001', last_state: 'failed', last_error_code: 'not-found' },
      { video_id: 'vidTrans001', last_state: 'sunk', last_error_code: null },
    ]);
  });

  it('re-sinks the rest from raw: stores what today reads, keeps the rest with the new reason, exit 1', async () => {
    expectExit(await replayTranscriptBatch(), 0);
    const r = await cli(['replay', '--quarantined']);
    expectExit(r, 1);
    expect(r.stdout).toBe(
      're-sank 6 quarantined item(s) from raw: 2 stored (2 row(s) inserted, 0 updated, 0 unchanged), 0 failed, 0 retryable, ' +
        '2 still quarantined (schema: 1, unstorable: 1), 2 skipped (duplicate: 1, too-large: 1); no API call\n',
    );
    const videos = await database.sql<
      { id: string; title: string; view_count: number | null; like_count: number | null }[]
    >`
      select id, title, view_count, like_count from videos order by id`;
    // null stays null; the duplicate copy's title is not the stored one; nothing of the broken ones
    expect(videos).toEqual([
      { id: 'vidFixed001', title: 'title of vidFixed001', view_count: null, like_count: null },
      { id: 'vidLegacy01', title: 'title of vidLegacy01', view_count: 1234, like_count: null },
    ]);
    const s = await items();
    expect(s['vidFixed001']).toEqual({ state: 'sunk', error_code: null, reason: null, reason_code: null });
    expect(s['vidLegacy01']).toEqual({ state: 'sunk', error_code: null, reason: null, reason_code: null });
    expect(s['vidFixed001#3']).toMatchObject({ state: 'quarantined', reason_code: 'duplicate' });
    expect(s['vidTooBig01']).toMatchObject({ state: 'quarantined', reason_code: 'too-large' });
    // today's reason, naming the failing path
    expect(s['vidBroken01']).toMatchObject({ state: 'quarantined', reason_code: 'schema' });
    expect(s['vidBroken01']!.reason).toMatch(/video\.duration/);
    expect(s['vidPoison01']).toMatchObject({ state: 'quarantined', reason_code: 'unstorable' });
    expect(s['vidSunk0001']).toMatchObject({ state: 'sunk' });
    const sync = await database.sql<{ video_id: string; last_state: string }[]>`
      select video_id, last_state from video_sync where kind = 'video' order by video_id`;
    expect(sync).toEqual([
      { video_id: 'vidBroken01', last_state: 'quarantined' },
      { video_id: 'vidFixed001', last_state: 'sunk' },
    ]);
  });

  it('status and /metrics show what is left; a second run stores nothing new and rewrites only the poison item', async () => {
    await replayAfterTranscriptBatch();
    const [report, m] = await Promise.all([statusJson(), scrape()]);
    expect(report.history.items.quarantined).toBe(4);
    expect(report.quarantined).toEqual({
      total: 4,
      byReason: { schema: 1, 'no-result': 0, duplicate: 1, 'too-large': 1, unparsable: 0, unstorable: 1, unknown: 0 },
    });
    expect(value(m, 'vsi_batch_items_quarantined', { reason: 'schema' })).toBe(1);
    expect(value(m, 'vsi_batch_items_quarantined', { reason: 'unknown' })).toBe(0);

    const before = await snapshot();
    const again = await cli(['replay', '--quarantined']);
    expectExit(again, 1);
    expect(again.stdout).toMatch(
      /^re-sank 4 quarantined item\(s\) from raw: 0 stored .*2 still quarantined \(schema: 1, unstorable: 1\), 2 skipped/,
    );
    const after = (await snapshot()) as { items: { video_id: string; updated_at: Date }[] };
    const b = before as typeof after;
    // only the poison item moved (landed for the sink, set aside again); nothing else was written
    const moved = after.items
      .filter((row, i) => row.updated_at.getTime() !== b.items[i]!.updated_at.getTime())
      .map((row) => row.video_id);
    expect(moved).toEqual(['vidPoison01']);
    expect((after as unknown as { videos: unknown }).videos).toEqual((b as unknown as { videos: unknown }).videos);
  });
});
