/**
 * The current version of a web page stored once (issue #34, migrations/0033): its history row
 * (`page_version_rows`) holds no copy of the content `pages` holds, and the view `page_versions`
 * reads exactly as the table did. Checked on a database migrated by the build before 0033 and
 * filled with that build's own statements, then migrated (the copies cleared, the view equal to
 * the table it replaces, the version counters unchanged), and through every way a page's current
 * version is replaced or comes back (a change, a return to earlier content, a page gone and
 * returned, a delete and a store again, a truncate), the compression of what each table keeps, an
 * INSERT into the view (the bench's seed writes versions so), and the older build's own version
 * statement, which the view refuses: why 0033 is not marked backward-compatible.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../src/db/connection.ts';
import { MIGRATIONS_FOLDER } from '../../src/db/migrate.ts';
import { markPagesGoneFor, storePages, type PageRow } from '../../src/db/pages.ts';
import { pageSha256 } from '../../src/domain/pages.ts';
import { isMarkedBackwardCompatible } from '../../src/domain/schema-compat.ts';
import { olderBuildDatabase, type OlderBuildDatabase } from '../helpers/older-build.ts';

const FIRST_MIGRATION_AFTER = '0033_page_versions_once';

let db: OlderBuildDatabase | undefined;
let sql: Sql;

beforeAll(async () => {
  db = await olderBuildDatabase(FIRST_MIGRATION_AFTER, 'page_versions_once');
  sql = db.sql;
});
afterAll(async () => {
  await db?.close();
});

/** Every content stored in this file, by its hash: what each version must read. */
const delivered = new Map<string, string>();

function page(pageUrl: string, content: string): PageRow {
  const sha256 = pageSha256(content);
  delivered.set(sha256, content);
  return {
    url: pageUrl,
    name: content.slice(0, 20),
    description: null,
    ogUrl: null,
    content,
    countCharacters: content.length,
    sha256,
  };
}

/**
 * The build before 0033's statements (src/db/pages.ts upsertPageRows and writeVersionsAndSections
 * of that build, as they were): the page upserted, then its version inserted by that build itself.
 */
const OLDER_BUILD_VERSION_INSERT = `
    insert into page_versions (url, content_sha256, name, description, og_url, content, count_characters, job_id)
    select url, content_sha256, name, description, og_url, content, count_characters, $2::text
    from pages where url = any($1::text[])
    on conflict (url, content_sha256) do nothing`;

async function olderBuildStore(pageUrl: string, content: string): Promise<void> {
  const r = page(pageUrl, content);
  const jobId = `job:${content}`;
  await sql.begin(async (tx) => {
    await tx`
      insert into pages as p (url, name, description, og_url, content, count_characters, content_sha256, job_id)
      values (${r.url}, ${r.name}, ${r.description}, ${r.ogUrl}, ${r.content}, ${r.countCharacters}, ${r.sha256}, ${jobId})
      on conflict (url) do update set
        name = excluded.name, description = excluded.description, og_url = excluded.og_url,
        content = excluded.content, count_characters = excluded.count_characters,
        content_sha256 = excluded.content_sha256, job_id = excluded.job_id, last_seen_at = now(), gone_at = null`;
    await tx.unsafe(OLDER_BUILD_VERSION_INSERT, [[r.url], jobId]);
  });
}

/** Stores pages as this build lands them. */
async function store(sourceId: number | null, ...rows: PageRow[]): Promise<void> {
  await sql.begin((tx) => storePages(tx, { jobId: `job:${rows.length}`, sourceId }, rows));
}

interface Version {
  url: string;
  content_sha256: string;
  content: string;
}
const versions = () => sql<Version[]>`
  select url, content_sha256, content from page_versions order by url, stored_at, content_sha256`;

/** Every version reads the content it was delivered with. */
function expectVersionsDelivered(rows: Version[]): void {
  for (const v of rows) expect(v.content, `${v.url} ${v.content_sha256}`).toBe(delivered.get(v.content_sha256));
}

/**
 * What is stored: no version row repeats its page's current content (null), every other one holds
 * its own; and the version counter (migrations/0019) equals the rows.
 */
async function copiesStored(): Promise<{
  current: number;
  past: number;
  currentWithCopy: number;
  pastWithout: number;
  counted: number;
}> {
  const [r] = await sql<
    { current: number; past: number; currentWithCopy: number; pastWithout: number; counted: number }[]
  >`
    select count(*) filter (where p.url is not null)::int as current,
      count(*) filter (where p.url is null)::int as past,
      count(*) filter (where p.url is not null and v.content is not null)::int as "currentWithCopy",
      count(*) filter (where p.url is null and v.content is null)::int as "pastWithout",
      (select coalesce(sum(versions), 0)::int from page_counts) - count(*)::int as counted
    from page_version_rows v
      left join pages p on p.url = v.url and p.content_sha256 = v.content_sha256`;
  return r!;
}

describe('the current version of a web page stored once', () => {
  let sourceId: number;

  it('migrating clears the copies of the current versions and reads the same through the view', async () => {
    await olderBuildStore('https://a.test/1', '# One\n\nfirst words');
    await olderBuildStore('https://a.test/2', '# Two\n\nthe only version');
    await olderBuildStore('https://a.test/1', '# One\n\nsecond words');
    await olderBuildStore('https://a.test/1', '# One\n\nthird words');
    await olderBuildStore('https://a.test/3', '# Three\n\ngone since');
    await sql`update pages set gone_at = now() where url = 'https://a.test/3'`;
    const before = await sql`select * from page_versions order by url, stored_at, content_sha256`;
    expect(before.map((r) => [r.url, r.content])).toEqual([
      ['https://a.test/1', '# One\n\nfirst words'],
      ['https://a.test/1', '# One\n\nsecond words'],
      ['https://a.test/1', '# One\n\nthird words'],
      ['https://a.test/2', '# Two\n\nthe only version'],
      ['https://a.test/3', '# Three\n\ngone since'],
    ]);
    // the table before 0033 holds the current pages' content a second time
    expect(
      await sql`
        select count(*)::int as copies from page_versions v join pages p using (url)
        where v.content_sha256 = p.content_sha256 and v.content = p.content`,
    ).toEqual([{ copies: 3 }]);

    await db!.upgrade();
    expect(await sql`select * from page_versions order by url, stored_at, content_sha256`).toEqual(before);
    expect(await copiesStored()).toEqual({ current: 3, past: 2, currentWithCopy: 0, pastWithout: 0, counted: 0 });
  });

  it('a change, a return, a page gone and back, a delete and a truncate keep one copy of each version', async () => {
    const [web] = await sql<{ id: number }[]>`
      insert into sources (kind, ref, external_id, max_videos) values ('website', 'https://a.test/', 'https://a.test/', 100)
      returning id`;
    sourceId = web!.id;
    // a change, a return to the first content, a new page, and one unchanged
    await store(
      sourceId,
      page('https://a.test/1', '# One\n\nfirst words'),
      page('https://a.test/2', '# Two\n\na new version'),
      page('https://a.test/4', '# Four\n\nnew here'),
      page('https://a.test/3', '# Three\n\ngone since'),
    );
    expectVersionsDelivered(await versions());
    expect(await copiesStored()).toEqual({ current: 4, past: 3, currentWithCopy: 0, pastWithout: 0, counted: 0 });

    // gone: still the current version, read from the page it stays in
    await sql.begin((tx) => markPagesGoneFor(tx, { jobId: 'scrape-1', sourceId }, ['https://a.test/4']));
    expect(await sql`select gone_at is not null as gone from pages where url = 'https://a.test/4'`).toEqual([
      { gone: true },
    ]);
    expect(await sql`select content from page_versions where url = 'https://a.test/4'`).toEqual([
      { content: '# Four\n\nnew here' },
    ]);
    expect(await copiesStored()).toEqual({ current: 4, past: 3, currentWithCopy: 0, pastWithout: 0, counted: 0 });
    await store(sourceId, page('https://a.test/4', '# Four\n\nback, changed'));
    expectVersionsDelivered(await versions());
    expect(await copiesStored()).toEqual({ current: 4, past: 4, currentWithCopy: 0, pastWithout: 0, counted: 0 });

    await sql`delete from pages where url = 'https://a.test/2'`;
    expectVersionsDelivered(await versions());
    expect(await copiesStored()).toEqual({ current: 3, past: 5, currentWithCopy: 0, pastWithout: 0, counted: 0 });

    // the same content stored again is the current version again: its copy cleared, no new row
    await store(sourceId, page('https://a.test/2', '# Two\n\na new version'));
    expect(await copiesStored()).toEqual({ current: 4, past: 4, currentWithCopy: 0, pastWithout: 0, counted: 0 });

    const all = await versions();
    expectVersionsDelivered(all);
    expect(all.map((v) => [v.url, v.content])).toEqual([
      ['https://a.test/1', '# One\n\nfirst words'],
      ['https://a.test/1', '# One\n\nsecond words'],
      ['https://a.test/1', '# One\n\nthird words'],
      ['https://a.test/2', '# Two\n\nthe only version'],
      ['https://a.test/2', '# Two\n\na new version'],
      ['https://a.test/3', '# Three\n\ngone since'],
      ['https://a.test/4', '# Four\n\nnew here'],
      ['https://a.test/4', '# Four\n\nback, changed'],
    ]);
    await sql`truncate pages`;
    expect(await versions()).toEqual(all);
    expect(await copiesStored()).toEqual({ current: 0, past: 8, currentWithCopy: 0, pastWithout: 0, counted: 0 });
  });

  it('a past version is stored with pglz, whatever the page was stored with', async () => {
    // pages.content takes the server's default_toast_compression (pglz unless set): lz4 here, so
    // that a past version copied as it is, not compressed again, would show
    await sql`alter table pages alter column content set compression lz4`;
    const long = (word: string) => Array.from({ length: 3000 }, (_, i) => `${word}${i % 97}`).join(' ');
    await store(sourceId, page('https://a.test/long', long('before')));
    await store(sourceId, page('https://a.test/long', long('after')));
    expect(
      await sql`
        select pg_column_compression(v.content) as past,
          (select pg_column_compression(p.content) from pages p where p.url = v.url) as current
        from page_version_rows v where v.url = 'https://a.test/long' and v.content is not null`,
    ).toEqual([{ past: 'pglz', current: 'lz4' }]);
    expectVersionsDelivered(await versions());
  });

  it('an INSERT into the view stores no copy of the current content, and keeps a past one', async () => {
    await store(sourceId, page('https://a.test/seeded', '# Seeded\n\nnow'));
    await sql`delete from page_versions where url = 'https://a.test/seeded'`;
    const past = page('https://a.test/seeded', '# Seeded\n\nbefore');
    await sql`
      insert into page_versions (url, content_sha256, name, description, og_url, content, count_characters, job_id)
      select url, content_sha256, name, description, og_url, content, count_characters, 'seed'
      from pages where url = 'https://a.test/seeded'
      union all
      select ${past.url}::text, ${past.sha256}::text, ${past.name}::text, null, null, ${past.content}::text,
        ${past.countCharacters}::bigint, 'seed'`;
    expectVersionsDelivered(await versions());
    expect(
      await sql`select content from page_version_rows where url = 'https://a.test/seeded' order by content nulls first`,
    ).toEqual([{ content: null }, { content: '# Seeded\n\nbefore' }]);
    expect(await copiesStored()).toMatchObject({ currentWithCopy: 0, pastWithout: 0, counted: 0 });
  });

  it("the older build's version statement is refused on this schema: 0033 is not marked backward-compatible", async () => {
    await store(sourceId, page('https://a.test/older', '# Older\n\nstored by this build'));
    await expect(sql.unsafe(OLDER_BUILD_VERSION_INSERT, [['https://a.test/older'], 'job:older'])).rejects.toMatchObject(
      {
        code: '42P10',
      },
    );
    expect(
      isMarkedBackwardCompatible(readFileSync(join(MIGRATIONS_FOLDER, `${FIRST_MIGRATION_AFTER}.sql`), 'utf8')),
    ).toBe(false);
  });
});
