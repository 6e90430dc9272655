/**
 * The database layer against a real Postgres: migrations (creation, concurrency), the bulk
 * upserts of videos and transcripts (values as delivered, changed-only updated_at), landing raw
 * items, and the in-flight batch guard. Each test database is private to this file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import type { Transcript, Video } from '../../src/api/schemas.ts';
import { insertSource } from '../../src/db/sources.ts';
import {
  committedMigrations,
  databaseNameOf,
  ensureDatabase,
  migrateDatabase,
  migrationsCurrent,
  MigrationError,
} from '../../src/db/migrate.ts';
import { upsertVideos, videoRowFromApi, type VideoRow } from '../../src/db/videos.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../../src/db/transcripts.ts';
import { landItems, markSunk, markUnfinishedRetryable, nextLandedChunk } from '../../src/db/items.ts';
import { UnstorableValueError } from '../../src/db/storable.ts';
import { createTestDatabase, dropDatabase, testDatabaseName, testServerUrl, type TestDatabase } from '../helpers/db.ts';

function video(id: string, over: Partial<Video> = {}): Video {
  return {
    id,
    title: `Video ${id}`,
    description: 'a description',
    duration: 61.5,
    channel: { id: 'UCchannel', name: 'The Channel' },
    tags: ['one', 'two'],
    thumbnail: `https://img.example/${id}.jpg`,
    uploadDate: '2024-05-01T10:00:00Z',
    viewCount: 1200,
    likeCount: 34,
    transcriptLanguages: ['en'],
    ...over,
  };
}

async function databaseExists(name: string): Promise<boolean> {
  const admin = postgres(testServerUrl('postgres'), { max: 1, onnotice: () => {} });
  try {
    const rows = await admin`select 1 from pg_database where datname = ${name}`;
    return rows.length === 1;
  } finally {
    await admin.end();
  }
}

describe('migrate', () => {
  const created: string[] = [];
  afterAll(async () => {
    await Promise.all(created.map((name) => dropDatabase(name)));
  });

  it('creates a missing database, applies every migration once, and is a no-op the second time', async () => {
    const name = testDatabaseName('migrate_create');
    created.push(name);
    const url = testServerUrl(name);
    expect(await databaseExists(name)).toBe(false);

    const first = await migrateDatabase(url);
    expect(first).toEqual({ created: true, applied: committedMigrations().length });
    expect(await databaseExists(name)).toBe(true);

    const second = await migrateDatabase(url);
    expect(second).toEqual({ created: false, applied: 0 });

    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      expect(await migrationsCurrent(sql)).toBe(true);
      const tables = await sql<{ table_name: string }[]>`
        select table_name from information_schema.tables where table_schema = 'public' order by 1`;
      expect(tables.map((t) => t.table_name)).toEqual(
        expect.arrayContaining(['sources', 'batches', 'batch_items', 'videos', 'transcripts', 'credit_snapshots']),
      );
    } finally {
      await sql.end();
    }
  });

  it('three concurrent runs on a missing database create it once and apply each migration once', async () => {
    const name = testDatabaseName('migrate_race');
    created.push(name);
    const url = testServerUrl(name);
    // allSettled: a failing run must not leave the others running into the database drop
    const settled = await Promise.allSettled([migrateDatabase(url), migrateDatabase(url), migrateDatabase(url)]);
    expect(settled.map((s) => (s.status === 'rejected' ? String(s.reason) : 'ok'))).toEqual(['ok', 'ok', 'ok']);
    const results = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(results.reduce((n, r) => n + r.applied, 0)).toBe(committedMigrations().length);

    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
      expect(row?.n).toBe(committedMigrations().length);
    } finally {
      await sql.end();
    }
  });

  it('reports an empty database as not current', async () => {
    const name = testDatabaseName('migrate_empty');
    created.push(name);
    const url = testServerUrl(name);
    expect(await ensureDatabase(url)).toBe(true);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      expect(await migrationsCurrent(sql)).toBe(false);
    } finally {
      await sql.end();
    }
  });

  it('refuses a database name that is not plain letters, digits, _ and -', () => {
    expect(() => databaseNameOf('postgres://u@h/a";drop database x;--')).toThrow(MigrationError);
    expect(databaseNameOf('postgres://u@h:5432/videosite_ingest-2?sslmode=disable')).toBe('videosite_ingest-2');
  });
});

describe('repositories', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('db');
  });
  afterAll(async () => {
    await t?.drop();
  });

  describe('videos', () => {
    it('a second upsert of the same rows changes nothing, updated_at included', async () => {
      const rows = ['a1', 'a2', 'a3'].map((id) => videoRowFromApi(video(id), 'job-1'));
      expect(await upsertVideos(t.sql, rows)).toEqual({ inserted: 3, updated: 0, unchanged: 0 });
      const before = await t.sql<{ id: string; updated_at: string; first_seen_at: string }[]>`
        select id, updated_at::text, first_seen_at::text from videos where id like 'a%' order by id`;

      expect(await upsertVideos(t.sql, rows)).toEqual({ inserted: 0, updated: 0, unchanged: 3 });
      const after =
        await t.sql`select id, updated_at::text, first_seen_at::text from videos where id like 'a%' order by id`;
      expect(after).toEqual(before);
    });

    it('a changed title moves updated_at of that row only', async () => {
      const rows = ['b1', 'b2'].map((id) => videoRowFromApi(video(id), 'job-1'));
      await upsertVideos(t.sql, rows);
      const [b1Before, b2Before] = await t.sql<{ updated_at: string; first_seen_at: string }[]>`
        select updated_at::text, first_seen_at::text from videos where id in ('b1', 'b2') order by id`;

      const changed = [videoRowFromApi(video('b1', { title: 'A new title' }), 'job-2'), rows[1]!];
      expect(await upsertVideos(t.sql, changed)).toEqual({ inserted: 0, updated: 1, unchanged: 1 });
      const [b1, b2] = await t.sql<{ title: string; updated_at: string; first_seen_at: string; last_job_id: string }[]>`
        select title, updated_at::text, first_seen_at::text, last_job_id from videos where id in ('b1', 'b2') order by id`;
      expect(b1!.title).toBe('A new title');
      expect(b1!.updated_at > b1Before!.updated_at).toBe(true);
      expect(b1!.first_seen_at).toBe(b1Before!.first_seen_at);
      expect(b1!.last_job_id).toBe('job-2');
      expect(b2).toMatchObject({ updated_at: b2Before!.updated_at, last_job_id: 'job-1' });
    });

    it('keeps null as NULL and absent as NULL, never 0 or empty', async () => {
      const bare = video('c1', { viewCount: null, likeCount: undefined, uploadDate: null, description: '' });
      delete bare.thumbnail;
      delete bare.likeCount;
      const zero = video('c2', { viewCount: 0, likeCount: 0 });
      await upsertVideos(t.sql, [videoRowFromApi(bare, 'job-1'), videoRowFromApi(zero, 'job-1')]);
      const [c1] = await t.sql`
        select view_count is null as view_null, like_count is null as like_null,
               thumbnail is null as thumb_null, upload_date is null as date_null, description
        from videos where id = 'c1'`;
      expect(c1).toEqual({ view_null: true, like_null: true, thumb_null: true, date_null: true, description: '' });
      const [c2] = await t.sql`select view_count, like_count from videos where id = 'c2'`;
      expect(c2).toEqual({ view_count: 0, like_count: 0 });
    });

    it('stores text byte-exact and dates to the microsecond', async () => {
      const title = 'Ünïcödé 🎬👩‍👩‍👧 עברית "quotes" \\back\\slash\ttab\r\nline é (e + U+0301)';
      const description = `${'𝒜 long description 🚀 '.repeat(30_000)}end`;
      const row = videoRowFromApi(
        video('d1', {
          title,
          description,
          tags: ['😀', '', 'NULL', '{a,b}'],
          uploadDate: '2024-02-29T23:59:59.123456+05:30',
        }),
        'job-1',
      );
      await upsertVideos(t.sql, [row]);
      const [d1] = await t.sql<
        { title: string; description: string; tags: string[]; bytes: number; same_instant: boolean }[]
      >`
        select title, description, tags, octet_length(description) as bytes,
               upload_date = '2024-02-29T18:29:59.123456Z'::timestamptz as same_instant
        from videos where id = 'd1'`;
      expect(d1!.title).toBe(title);
      expect(d1!.description).toBe(description);
      expect(d1!.bytes).toBe(Buffer.byteLength(description, 'utf8'));
      expect(d1!.tags).toEqual(['😀', '', 'NULL', '{a,b}']);
      expect(d1!.same_instant).toBe(true);
    });

    it('maps the channel and duration, and the last of duplicate rows wins', async () => {
      const rows = [
        videoRowFromApi(video('e1', { title: 'first' }), 'job-1'),
        videoRowFromApi(video('e1', { title: 'second' }), 'job-1'),
      ];
      expect(await upsertVideos(t.sql, rows)).toEqual({ inserted: 1, updated: 0, unchanged: 0 });
      const [e1] =
        await t.sql`select title, channel_id, channel_name, duration_s, transcript_languages from videos where id = 'e1'`;
      expect(e1).toEqual({
        title: 'second',
        channel_id: 'UCchannel',
        channel_name: 'The Channel',
        duration_s: 61.5,
        transcript_languages: ['en'],
      });
    });

    it('refuses, with the field, a value Postgres cannot hold as delivered', () => {
      expect(() => videoRowFromApi(video('f1', { title: 'nul \u0000 inside' }), 'job-1')).toThrow(
        expect.objectContaining({ name: 'UnstorableValueError', path: 'video.title' }),
      );
      expect(() => videoRowFromApi(video('f2', { viewCount: 1.5 }), 'job-1')).toThrow(UnstorableValueError);
      expect(() => videoRowFromApi(video('f3', { tags: ['ok', 'lone \uD800'] }), 'job-1')).toThrow(
        expect.objectContaining({ path: 'video.tags[1]' }),
      );
    });
  });

  describe('transcripts', () => {
    const chunks = [
      { text: 'Hello', offset: 0, duration: 1500, lang: 'en' },
      { text: 'wörld 🌍', offset: 1500, duration: 1000 },
      { text: '  spaced  ', offset: 2500, duration: 500, lang: 'en', extra: 'kept as delivered' },
    ];

    it('joins chunk texts with a single space and keeps the chunks as delivered', async () => {
      const tr = { content: chunks, lang: 'de', availableLangs: ['en', 'de'] } as Transcript;
      const row = transcriptRowFromApi('t1', tr, 'job-t');
      expect(await upsertTranscripts(t.sql, [row])).toEqual({ inserted: 1, updated: 0, unchanged: 0 });
      const [got] = await t.sql`
        select lang, text, chunks, available_langs, text_only, content_sha256 from transcripts where video_id = 't1'`;
      expect(got).toEqual({
        lang: 'de',
        text: 'Hello wörld 🌍   spaced  ',
        chunks,
        available_langs: ['en', 'de'],
        text_only: false,
        content_sha256: row.contentSha256,
      });
    });

    it('stores string content as text with NULL chunks, and empty content as "" with []', async () => {
      const plain = transcriptRowFromApi(
        't2',
        { content: 'Plain text,  as delivered.\n', lang: 'en', availableLangs: ['en'] },
        'job-t',
      );
      const empty = transcriptRowFromApi('t3', { content: [], lang: 'en', availableLangs: [] }, 'job-t');
      await upsertTranscripts(t.sql, [plain, empty]);
      const rows = await t.sql`
        select video_id, text, chunks is null as chunks_null, chunks = '[]'::jsonb as chunks_empty, text_only
        from transcripts where video_id in ('t2', 't3') order by video_id`;
      expect(rows).toEqual([
        {
          video_id: 't2',
          text: 'Plain text,  as delivered.\n',
          chunks_null: true,
          chunks_empty: null,
          text_only: true,
        },
        { video_id: 't3', text: '', chunks_null: false, chunks_empty: true, text_only: false },
      ]);
    });

    it('rewrites a transcript only when its content or languages change', async () => {
      const tr = { content: chunks, lang: 'en', availableLangs: ['en'] } as Transcript;
      await upsertTranscripts(t.sql, [transcriptRowFromApi('t4', tr, 'job-1')]);
      const [before] = await t.sql`select updated_at::text from transcripts where video_id = 't4'`;

      // same content, keys in another order, another job: nothing to write
      const reordered = {
        availableLangs: ['en'],
        lang: 'en',
        content: chunks.map((c) => Object.fromEntries(Object.entries(c).reverse())),
      } as Transcript;
      expect(await upsertTranscripts(t.sql, [transcriptRowFromApi('t4', reordered, 'job-2')])).toEqual({
        inserted: 0,
        updated: 0,
        unchanged: 1,
      });
      const [same] = await t.sql`select updated_at::text, last_job_id from transcripts where video_id = 't4'`;
      expect(same).toEqual({ updated_at: before!.updated_at, last_job_id: 'job-1' });

      const more = { ...tr, availableLangs: ['en', 'fr'] } as Transcript;
      expect(await upsertTranscripts(t.sql, [transcriptRowFromApi('t4', more, 'job-3')])).toEqual({
        inserted: 0,
        updated: 1,
        unchanged: 0,
      });
      const [moved] = await t.sql<{ updated_at: string; last_job_id: string }[]>`
        select updated_at::text, last_job_id from transcripts where video_id = 't4'`;
      expect(moved!.updated_at > before!.updated_at).toBe(true);
      expect(moved!.last_job_id).toBe('job-3');
    });
  });

  describe('batch items', () => {
    /** A batch of its own for each test: no test reads the items another one landed. */
    async function newBatch(jobId: string, videoIds: string[]): Promise<string> {
      await t.sql`
        insert into batches (job_id, kind, status, credits_estimated, request)
        values (${jobId}, 'video', 'active', ${videoIds.length}, ${t.sql.json({ videoIds })})`;
      return jobId;
    }

    const landedRaw = '{"videoId":"i2","video":{"id":"i2","viewCount":12345678901234567890,"duration":1.50}}';

    it('lands items once and never lets a later answer replace a landed payload', async () => {
      const JOB = await newBatch('job-land-once', ['i1', 'i2', 'i3']);
      const first = await landItems(t.sql, JOB, [
        {
          videoId: 'i1',
          state: 'processing',
          errorCode: 'processing',
          payload: { videoId: 'i1', errorCode: 'processing' },
        },
        { videoId: 'i2', state: 'landed', errorCode: null, payload: JSON.parse(landedRaw), payloadRaw: landedRaw },
        { videoId: 'i3', state: 'failed', errorCode: 'not-found', payload: { videoId: 'i3', errorCode: 'not-found' } },
      ]);
      expect(first).toMatchObject({ written: 3, landed: 1 });

      // the same answer again writes nothing
      expect(
        await landItems(t.sql, JOB, [
          {
            videoId: 'i1',
            state: 'processing',
            errorCode: 'processing',
            payload: { videoId: 'i1', errorCode: 'processing' },
          },
          { videoId: 'i2', state: 'landed', errorCode: null, payload: JSON.parse(landedRaw), payloadRaw: landedRaw },
        ]),
      ).toMatchObject({ written: 0, landed: 0, rows: [] });

      // i1 finishes; i2's result is gone upstream by now, and i3 too
      const i1Payload = { videoId: 'i1', video: video('i1') };
      const gone = (id: string) => ({ videoId: id, errorCode: 'result-unavailable' });
      expect(
        await landItems(t.sql, JOB, [
          { videoId: 'i1', state: 'landed', errorCode: null, payload: i1Payload },
          { videoId: 'i2', state: 'retryable', errorCode: 'result-unavailable', payload: gone('i2') },
          { videoId: 'i3', state: 'retryable', errorCode: 'result-unavailable', payload: gone('i3') },
        ]),
      ).toMatchObject({ written: 1, landed: 1 });

      const rows = await t.sql`
        select video_id, state, error_code, payload->'video'->>'viewCount' as views,
               payload->'video'->>'duration' as duration, landed_at is not null as has_landed_at
        from batch_items where job_id = ${JOB} order by video_id`;
      expect(rows).toEqual([
        { video_id: 'i1', state: 'landed', error_code: null, views: '1200', duration: '61.5', has_landed_at: true },
        // numbers as received, not as a JS double would print them
        {
          video_id: 'i2',
          state: 'landed',
          error_code: null,
          views: '12345678901234567890',
          duration: '1.50',
          has_landed_at: true,
        },
        { video_id: 'i3', state: 'failed', error_code: 'not-found', views: null, duration: null, has_landed_at: false },
      ]);
    });

    it('reads landed items in chunks, marks them sunk, and keeps a sunk payload too', async () => {
      const JOB = await newBatch('job-chunks', ['i1', 'i2', 'i3']);
      await landItems(t.sql, JOB, [
        { videoId: 'i1', state: 'landed', errorCode: null, payload: { videoId: 'i1', video: video('i1') } },
        { videoId: 'i2', state: 'landed', errorCode: null, payload: JSON.parse(landedRaw), payloadRaw: landedRaw },
        { videoId: 'i3', state: 'failed', errorCode: 'not-found', payload: { videoId: 'i3', errorCode: 'not-found' } },
      ]);
      const chunk = await nextLandedChunk(t.sql, JOB, 10);
      expect(chunk.map((i) => i.videoId)).toEqual(['i1', 'i2']);
      expect(chunk[0]!.payload).toEqual({ videoId: 'i1', video: video('i1') });
      expect((await nextLandedChunk(t.sql, JOB, 10, { afterVideoId: 'i1' })).map((i) => i.videoId)).toEqual(['i2']);

      expect(await markSunk(t.sql, JOB, ['i1', 'i2'])).toBe(2);
      expect(await markSunk(t.sql, JOB, ['i1', 'i2'])).toBe(0);
      expect(await nextLandedChunk(t.sql, JOB, 10)).toEqual([]);

      await landItems(t.sql, JOB, [
        {
          videoId: 'i1',
          state: 'retryable',
          errorCode: 'result-unavailable',
          payload: { videoId: 'i1', errorCode: 'result-unavailable' },
        },
      ]);
      const [i1] =
        await t.sql`select state, payload->'video'->>'id' as id, sunk_at is not null as has_sunk_at from batch_items where job_id = ${JOB} and video_id = 'i1'`;
      expect(i1).toEqual({ state: 'sunk', id: 'i1', has_sunk_at: true });
    });

    it('keeps a payload jsonb cannot hold in payload_raw, losslessly', async () => {
      const JOB = await newBatch('job-raw-only', ['i4']);
      const payload = { videoId: 'i4', video: video('i4', { title: 'nul \u0000 and lone \uDC00' }) };
      const raw = JSON.stringify(payload);
      expect(
        await landItems(t.sql, JOB, [{ videoId: 'i4', state: 'landed', errorCode: null, payload, payloadRaw: raw }]),
      ).toEqual({
        written: 1,
        landed: 1,
        rows: [{ videoId: 'i4', state: 'landed', errorCode: null }],
      });
      const [row] =
        await t.sql`select payload is null as payload_null, payload_raw from batch_items where job_id = ${JOB} and video_id = 'i4'`;
      expect(row).toEqual({ payload_null: true, payload_raw: raw });
      const [item] = await nextLandedChunk(t.sql, JOB, 10);
      expect(item!.payload).toEqual(payload);
    });

    it('at expiry turns only unfinished items retryable', async () => {
      const JOB2 = await newBatch('job-expiring', ['j1', 'j2']);
      await landItems(t.sql, JOB2, [
        { videoId: 'j1', state: 'landed', errorCode: null, payload: { videoId: 'j1', video: video('j1') } },
        {
          videoId: 'j2',
          state: 'processing',
          errorCode: 'processing',
          payload: { videoId: 'j2', errorCode: 'processing' },
        },
      ]);
      expect(await markUnfinishedRetryable(t.sql, JOB2, 'processing')).toHaveLength(1);
      const rows =
        await t.sql`select video_id, state, error_code from batch_items where job_id = ${JOB2} order by video_id`;
      expect(rows).toEqual([
        { video_id: 'j1', state: 'landed', error_code: null },
        { video_id: 'j2', state: 'retryable', error_code: 'processing' },
      ]);
    });
  });

  describe('batches', () => {
    it('holds several in-flight batches of one source, kind and language; a transcript job only as a transcript', async () => {
      // A list of 12 000 IDs is submitted as batches of 5000, 5000 and 2000 per kind in one sync:
      // what keeps a video from being bought twice is its claim in video_sync (one row per video,
      // kind and language), not a limit of one batch in flight.
      const src = await insertSource(t.sql, {
        kind: 'videos',
        ref: '3 video IDs',
        externalId: 'videos:0123456789abcdef',
        maxVideos: 3,
        langs: ['en'],
      });
      const sourceId = src.id;
      const insertBatch = (jobId: string, kind: string, status: string, lang: string | null, mode = 'batch') =>
        t.sql`
          insert into batches (job_id, source_id, kind, lang, status, mode, credits_estimated, request)
          values (${jobId}, ${sourceId}, ${kind}, ${lang}, ${status}, ${mode}, 3, ${t.sql.json({ videoIds: ['a', 'b'] })})`;
      await insertBatch('v-1', 'video', 'submitted', null);
      await insertBatch('v-2', 'video', 'active', null);
      await insertBatch('t-en-1', 'transcript', 'queued', 'en');
      await insertBatch('t-en-2', 'transcript', 'submitted', 'en');
      await insertBatch('g-en-1', 'transcript', 'queued', 'en', 'generate');
      const inFlight =
        await t.sql`select job_id from batches where source_id = ${sourceId} and status in ('submitted', 'queued', 'active') order by job_id`;
      expect(inFlight.map((r) => r.job_id)).toEqual(['g-en-1', 't-en-1', 't-en-2', 'v-1', 'v-2']);
      await expect(insertBatch('g-v-1', 'video', 'queued', null, 'generate')).rejects.toMatchObject({
        code: '23514',
        constraint_name: 'batches_mode_ck',
      });
      await expect(
        t.sql`insert into sources (kind, ref, external_id, max_videos) values ('hashtag', '#x', '#x', 1)`,
      ).rejects.toMatchObject({ code: '23514', constraint_name: 'sources_kind_ck' });
    });
  });

  describe('bulk speed (printed, not asserted)', () => {
    it('upserts 5000 videos and 5000 transcripts of ~20 KB in chunks of 500', async () => {
      const N = 5000;
      const CHUNK = 500;
      const prose = 'the quick brown fox jumps over the lazy dog while a transcript keeps rolling on ';
      const videos: VideoRow[] = [];
      const transcripts = [];
      for (let i = 0; i < N; i++) {
        const id = `bulk${String(i).padStart(5, '0')}`;
        videos.push(videoRowFromApi(video(id, { description: prose.repeat(20) }), 'job-bulk'));
        const content = Array.from({ length: 150 }, (_, j) => ({
          text: `${i}:${j} ${prose}${prose.slice(0, 40)}`,
          offset: j * 4000,
          duration: 3900,
          lang: 'en',
        }));
        transcripts.push(transcriptRowFromApi(id, { content, lang: 'en', availableLangs: ['en'] }, 'job-bulk'));
      }
      const textBytes = transcripts.reduce((n, r) => n + r.text.length, 0) / N;

      const timeChunks = async <R>(rows: R[], upsert: (chunk: R[]) => Promise<unknown>): Promise<number> => {
        const t0 = performance.now();
        for (let i = 0; i < rows.length; i += CHUNK) await upsert(rows.slice(i, i + CHUNK));
        return Math.round(performance.now() - t0);
      };
      const videosMs = await timeChunks(videos, (c) => upsertVideos(t.sql, c));
      const videosAgainMs = await timeChunks(videos, (c) => upsertVideos(t.sql, c));
      const transcriptsMs = await timeChunks(transcripts, (c) => upsertTranscripts(t.sql, c));
      const transcriptsAgainMs = await timeChunks(transcripts, (c) => upsertTranscripts(t.sql, c));
      console.log(
        `[db bulk] ${N} videos: ${videosMs} ms (unchanged re-run ${videosAgainMs} ms); ` +
          `${N} transcripts of ~${Math.round(textBytes / 1000)} KB text + 150 chunks: ${transcriptsMs} ms ` +
          `(unchanged re-run ${transcriptsAgainMs} ms); chunks of ${CHUNK}`,
      );
      const [counts] = await t.sql`
        select (select count(*) from videos where id like 'bulk%') as videos,
               (select count(*) from transcripts where video_id like 'bulk%') as transcripts`;
      expect(counts).toEqual({ videos: N, transcripts: N });
    });
  });
});
