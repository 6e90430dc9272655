/**
 * The current version of a transcript stored once (issue #34, migrations/0029): its history row
 * (`transcript_version_rows`) holds no copy of the text and chunks `transcripts` holds, and the
 * view `transcript_versions` reads exactly as the table did. Checked on a database migrated by
 * the build before 0029 and filled through its triggers, then migrated (the copies cleared, the
 * view equal to the table it replaces), and through every way a transcript's current version is
 * replaced (a change, a return to earlier content, a delete, a truncate), the compression of what
 * each table keeps, and the statement an older build moves `last_seen_at` with.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../src/db/connection.ts';
import { olderBuildDatabase, type OlderBuildDatabase } from '../helpers/older-build.ts';

const FIRST_MIGRATION_AFTER = '0029_one_copy';

let db: OlderBuildDatabase | undefined;
let sql: Sql;

beforeAll(async () => {
  db = await olderBuildDatabase(FIRST_MIGRATION_AFTER, 'versions_once');
  sql = db.sql;
});
afterAll(async () => {
  await db?.close();
});

const chunksOf = (text: string) => text.split(' ').map((t, i) => ({ text: t, start: i, duration: 1 }));

/** Stores (or replaces) a transcript as the sink does: text, chunks (null: a string) and a content hash. */
async function store(videoId: string, text: string, opts: { chunks?: boolean; sha?: string } = {}): Promise<void> {
  const chunks = opts.chunks === false ? null : chunksOf(text);
  const sha = opts.sha ?? `sha:${text}`;
  await sql`
    insert into transcripts (video_id, lang, text, chunks, content_sha256, last_job_id)
    values (${videoId}, 'en', ${text}, ${chunks === null ? null : sql.json(chunks)}, ${sha}, ${`job:${text}`})
    on conflict (video_id, lang) do update set text = excluded.text, chunks = excluded.chunks,
      content_sha256 = excluded.content_sha256, last_job_id = excluded.last_job_id`;
}

interface Version {
  video_id: string;
  content_sha256: string;
  text: string;
  chunks: unknown;
}
const versions = () => sql<Version[]>`
  select video_id, content_sha256, text, chunks from transcript_versions order by video_id, id`;

/** Every version's text and chunks as delivered: `sha:<text>`'s text is `<text>`, a string's chunks null. */
function expectVersionsDelivered(rows: Version[]): void {
  for (const v of rows) {
    const text = v.content_sha256.slice('sha:'.length);
    expect(v.text, v.content_sha256).toBe(text);
    expect(v.chunks, v.content_sha256).toEqual(text.startsWith('a string') ? null : chunksOf(text));
  }
}

/**
 * What is stored: no version row repeats its transcript's current content (its text and chunks
 * null), and every other one holds its own.
 */
async function copiesStored(): Promise<{
  current: number;
  past: number;
  currentWithCopy: number;
  pastWithout: number;
}> {
  const [r] = await sql<{ current: number; past: number; currentWithCopy: number; pastWithout: number }[]>`
    select count(*) filter (where t.video_id is not null)::int as current,
      count(*) filter (where t.video_id is null)::int as past,
      count(*) filter (where t.video_id is not null and (v.text is not null or v.chunks is not null))::int as "currentWithCopy",
      count(*) filter (where t.video_id is null and v.text is null)::int as "pastWithout"
    from transcript_version_rows v
      left join transcripts t on t.video_id = v.video_id and t.lang = v.lang and t.content_sha256 = v.content_sha256`;
  return r!;
}

describe('the current version of a transcript stored once', () => {
  it('migrating clears the copies of the current versions and reads the same through the view', async () => {
    await store('a1', 'first words');
    await store('a2', 'only version');
    await store('s1', 'a string delivered', { chunks: false });
    await store('a1', 'second words');
    await store('a1', 'third words');
    const before = await sql`select * from transcript_versions order by id`;
    expect(before.map((r) => r.content_sha256)).toEqual([
      'sha:first words',
      'sha:only version',
      'sha:a string delivered',
      'sha:second words',
      'sha:third words',
    ]);

    await db!.upgrade();
    expect(await sql`select * from transcript_versions order by id`).toEqual(before);
    expect(await copiesStored()).toEqual({ current: 3, past: 2, currentWithCopy: 0, pastWithout: 0 });
  });

  it('a change, a return to earlier content, a delete and a truncate keep one copy of each version', async () => {
    await store('a2', 'a new version');
    await store('a1', 'second words');
    await store('s1', 'now with chunks');
    await store('s1', 'a string again', { chunks: false });
    expectVersionsDelivered(await versions());
    expect(await copiesStored()).toEqual({ current: 3, past: 5, currentWithCopy: 0, pastWithout: 0 });

    await sql`delete from transcripts where video_id = 'a2'`;
    expectVersionsDelivered(await versions());
    expect(await copiesStored()).toEqual({ current: 2, past: 6, currentWithCopy: 0, pastWithout: 0 });

    // the same content stored again is the current version again: its copy cleared
    await store('a2', 'a new version');
    expect(await copiesStored()).toEqual({ current: 3, past: 5, currentWithCopy: 0, pastWithout: 0 });

    const all = await versions();
    await sql`truncate transcripts`;
    expect(await versions()).toEqual(all);
    expect(await copiesStored()).toEqual({ current: 0, past: 8, currentWithCopy: 0, pastWithout: 0 });
  });

  it('a past version is stored with pglz, the current transcript with lz4', async () => {
    const long = (word: string) => Array.from({ length: 3000 }, (_, i) => `${word}${i % 97}`).join(' ');
    await store('c1', long('before'));
    await store('c1', long('after'));
    const [r] = await sql<{ text: string | null; chunks: string | null; current: string | null }[]>`
      select pg_column_compression(v.text) as text, pg_column_compression(v.chunks) as chunks,
        (select pg_column_compression(t.text) from transcripts t where t.video_id = 'c1') as current
      from transcript_version_rows v where v.video_id = 'c1' and v.text is not null`;
    expect(r).toEqual({ text: 'pglz', chunks: 'pglz', current: 'lz4' });
  });

  it("an older build's statement moves last_seen_at through the view", async () => {
    await store('o1', 'seen twice');
    await sql`
      update transcript_versions v set last_seen_at = now(), last_job_id = r.job_id
      from unnest(${['o1']}::text[], ${['en']}::text[], ${['sha:seen twice']}::text[], ${['job:again']}::text[])
        as r(video_id, lang, sha, job_id)
      where v.video_id = r.video_id and v.lang = r.lang and v.content_sha256 = r.sha`;
    expect(await sql`select last_job_id, text from transcript_versions where video_id = 'o1'`).toEqual([
      { last_job_id: 'job:again', text: 'seen twice' },
    ]);
  });
});
