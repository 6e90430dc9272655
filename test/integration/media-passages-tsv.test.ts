/**
 * Media passages without a tsvector (issue #34, migrations/0036): media search reads
 * `media_segments`, so a media passage's tsvector was read by nothing. Checked on a database
 * migrated by the build before 0036, with passages of each kind cut through its trigger, then
 * migrated: the media passages' tsvectors are emptied, the others' kept as they were; passages
 * written afterwards (as a build that does not name these columns writes them) get an empty one
 * for media and a full one for every other kind.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../src/db/connection.ts';
import { olderBuildDatabase, type OlderBuildDatabase } from '../helpers/older-build.ts';

const FIRST_MIGRATION_AFTER = '0036_media_passages_without_tsv';

let db: OlderBuildDatabase | undefined;
let sql: Sql;

beforeAll(async () => {
  db = await olderBuildDatabase(FIRST_MIGRATION_AFTER, 'media_passages_tsv');
  sql = db.sql;
});
afterAll(async () => {
  await db?.close();
});

const KINDS = ['transcript', 'page', 'media'] as const;
type Kind = (typeof KINDS)[number];

/** Cuts a passage of `kind` as the indexer does, naming neither `config` nor `tsv` (the trigger sets both). */
async function cut(kind: Kind, doc: string, text: string): Promise<void> {
  await sql`
    insert into passages (kind, doc, lang, n, text, tokens, sha256)
    values (${kind}, ${doc}, 'en', 0, ${text}, ${text.split(' ').length}, ${`sha:${kind}:${doc}`})`;
}

interface Row {
  kind: Kind;
  doc: string;
  tsv: string;
}
const rows = () => sql<Row[]>`select kind, doc, tsv::text as tsv from passages order by kind, doc`;
const tsvOf = async (kind: Kind, doc: string) => (await rows()).find((r) => r.kind === kind && r.doc === doc)!.tsv;

describe('migration 0036 on a database of the build before it', () => {
  it('empties the media passages cut before, keeps the others; new media passages get none, the others a full one', async () => {
    for (const kind of KINDS) await cut(kind, `${kind}-old`, `the ${kind} speaks of herons and kingfishers`);
    const before = await rows();
    // the build before 0036 gave every kind its tsvector
    for (const r of before) expect(r.tsv, r.kind).toContain("'heron'");

    await db!.upgrade();

    const after = await rows();
    expect(after.find((r) => r.kind === 'media')!.tsv).toBe('');
    for (const kind of ['transcript', 'page'] as const)
      expect(after.find((r) => r.kind === kind)!.tsv, kind).toBe(before.find((r) => r.kind === kind)!.tsv);

    for (const kind of KINDS) await cut(kind, `${kind}-new`, `the ${kind} speaks of otters and voles`);
    expect(await tsvOf('media', 'media-new')).toBe('');
    for (const kind of ['transcript', 'page'] as const)
      expect(await tsvOf(kind, `${kind}-new`), kind).toContain("'otter'");

    // a re-cut passage's text changes: still none for media, the new words for the others
    await sql`update passages set text = 'a badger digs' where doc like '%-new'`;
    expect(await tsvOf('media', 'media-new')).toBe('');
    for (const kind of ['transcript', 'page'] as const)
      expect(await tsvOf(kind, `${kind}-new`), kind).toContain("'badger'");

    // the words of transcripts and pages are still found through their indexes
    const found = await sql<{ kind: Kind; doc: string }[]>`
      select kind, doc from passages where tsv @@ plainto_tsquery('english', 'herons') order by kind`;
    expect(found).toEqual([
      { kind: 'page', doc: 'page-old' },
      { kind: 'transcript', doc: 'transcript-old' },
    ]);
  });
});
