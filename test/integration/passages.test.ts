/**
 * Passages (issue #31): transcripts written through the sink's own upsert (src/db/transcripts.ts)
 * are cut into passages by the search indexer from the search queue (here the `search` CLI's own
 * drain, as a process); each passage starts and ends at its chunks' offsets and its link opens the
 * video at its start second; `status` shows the backlog and the count; a re-sync of unchanged
 * content cuts nothing, a changed transcript re-cuts only that document and keeps the ids of its
 * unchanged passages; `export --passages` writes them as JSONL and Parquet, with --cursor, --kind, --lang.
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storePages } from '../../src/db/pages.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../../src/db/transcripts.ts';
import { pageSha256 } from '../../src/domain/pages.ts';
import { tokenCount } from '../../src/domain/passages.ts';
import { drainSearchIndex } from '../../src/pipeline/services/search-index.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli, type CliResult } from '../helpers/pipeline.ts';

const URL_TEMPLATE = 'https://videos.example/watch?v={id}&t={seconds}';
const SIZE = 64;
const OVERLAP = 16;

let database: TestDatabase;
let env: Record<string, string>;
let dir: string;

const cli = (args: string[], extra: Record<string, string> = {}): Promise<CliResult> =>
  runCli(args, { ...env, ...extra }, 60_000);

interface Chunk {
  text: string;
  offset: number;
  duration: number;
}
/** `n` chunks of 6-13 words, chunk i at 5 s + 3.25 s * i (ms in the API), lasting 3 s. */
function chunks(n: number, tag: string, said: Record<number, string> = {}): Chunk[] {
  return Array.from({ length: n }, (_, i) => ({
    text: said[i] ?? `${tag} line ${i} ${'about the weather and the garden '.slice(0, 10 + ((i * 7) % 30))}`.trim(),
    offset: 5_000 + i * 3_250,
    duration: 3_000,
  }));
}

let job = 0;
async function store(videoId: string, lang: string, content: Chunk[] | string): Promise<void> {
  const row = transcriptRowFromApi(videoId, { content, lang, availableLangs: [lang] }, `job-passages-${++job}`);
  await upsertTranscripts(database.sql, [row]);
}

interface Row {
  id: number;
  doc: string;
  lang: string;
  n: number;
  text: string;
  tokens: number;
  sha256: string;
  start_s: number | null;
  end_s: number | null;
  first_chunk: number | null;
  last_chunk: number | null;
  xmin: string;
}
const passages = (doc?: string) =>
  database.sql<Row[]>`
    select id::float8 as id, doc, lang, n, text, tokens, sha256, start_s, end_s, first_chunk, last_chunk, xmin::text as xmin
    from passages where kind = 'transcript' and (${doc ?? null}::text is null or doc = ${doc ?? null}::text)
    order by doc, lang, n`;

const jsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

async function duck<T>(query: string): Promise<T[]> {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  try {
    return (await c.runAndReadAll(query)).getRowObjectsJson() as unknown as T[];
  } finally {
    c.closeSync();
  }
}

const vidA = chunks(120, 'alpha');
const vidB = chunks(40, 'beta');

beforeAll(async () => {
  database = await createTestDatabase('passages');
  dir = mkdtempSync(join(tmpdir(), 'vsi-passages-'));
  env = {
    DATABASE_URL: database.url,
    LOG_LEVEL: 'warn',
    QUEUE_PREFIX: `{vsi-test-passages-${process.pid}}`,
    PASSAGE_TOKENS: String(SIZE),
    PASSAGE_OVERLAP_TOKENS: String(OVERLAP),
    VIDEO_URL_TEMPLATE: URL_TEMPLATE,
  };
  await store('vidA', 'en', vidA);
  await store('vidB', 'de', vidB);
  await store('vidPlain', 'en', 'a plain text transcript without any timings at all');
}, 60_000);

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await database?.drop();
});

describe('passages', () => {
  it('status shows the backlog; the indexer (the search command’s drain) cuts them, with their chunks’ moments', async () => {
    const before = await cli(['status']);
    expectExit(before, 0);
    expect(before.stdout).toMatch(
      /search index and passages: 3 transcript\(s\) waiting to be indexed and cut .*; 0 passage\(s\)/,
    );

    expectExit(await cli(['search', 'weather']), 0);
    const rows = await passages('vidA');
    expect(rows.length).toBeGreaterThan(10);
    for (const p of rows) {
      expect(p.lang).toBe('en');
      expect(p.tokens).toBe(tokenCount(p.text));
      expect(p.tokens).toBeLessThanOrEqual(SIZE);
      expect(p.text).toBe(
        vidA
          .slice(p.first_chunk!, p.last_chunk! + 1)
          .map((c) => c.text)
          .join(' '),
      );
      expect(p.start_s).toBe(vidA[p.first_chunk!]!.offset / 1000);
      expect(p.end_s).toBe((vidA[p.last_chunk!]!.offset + vidA[p.last_chunk!]!.duration) / 1000);
    }
    // every chunk in some passage, in order, the first and the last included
    expect(rows[0]!.first_chunk).toBe(0);
    expect(rows.at(-1)!.last_chunk).toBe(vidA.length - 1);
    for (let i = 1; i < rows.length; i++)
      expect(rows[i]!.first_chunk!).toBeLessThanOrEqual(rows[i - 1]!.last_chunk! + 1);

    const plain = await passages('vidPlain');
    expect(plain).toHaveLength(1);
    expect(plain[0]).toMatchObject({
      start_s: null,
      end_s: null,
      first_chunk: null,
      text: 'a plain text transcript without any timings at all',
    });

    const after = await cli(['status']);
    const count = (await passages()).length;
    expect(after.stdout).toContain(`search index and passages: up to date; ${count} passage(s)`);
  });

  it('export --passages JSONL: every passage with its moment and its link at its start second', async () => {
    const out = join(dir, 'all.jsonl');
    const r = await cli(['export', '--passages', '--format', 'jsonl', '--out', out]);
    expectExit(r, 0);
    const rows = await passages();
    const records = jsonl(out);
    expect(records).toHaveLength(rows.length);
    const byId = new Map(records.map((x) => [x.id, x]));
    for (const p of rows) {
      expect(byId.get(p.id)).toEqual({
        id: p.id,
        kind: 'transcript',
        document: p.doc,
        lang: p.lang,
        n: p.n,
        text: p.text,
        tokens: p.tokens,
        sha256: p.sha256,
        start: p.start_s,
        end: p.end_s,
        headings: null,
        url: `https://videos.example/watch?v=${p.doc}&t=${Math.floor(p.start_s ?? 0)}`,
        removed: false,
      });
    }
    // chunk 7 of vidA starts at 27.75 s: a passage starting there links to t=27
    const at7 = records.find((x) => x.document === 'vidA' && x.start === 27.75);
    if (at7 !== undefined) expect(at7.url).toBe('https://videos.example/watch?v=vidA&t=27');
  });

  it('a re-sync of unchanged content cuts 0 passages; a changed transcript re-cuts only itself, keeping its unchanged passages’ ids', async () => {
    const before = await passages();
    // the same content again (a re-sync): the trigger queues nothing
    await store('vidA', 'en', vidA);
    await store('vidB', 'de', vidB);
    expect(await database.sql`select 1 from search_index_queue`).toHaveLength(0);
    // even queued by hand, an unchanged transcript keeps every passage: no row rewritten
    await database.sql`insert into search_index_queue (video_id, lang) values ('vidA', 'en'), ('vidB', 'de')`;
    expect(await drainSearchIndex({ sql: database.sql, passages: { size: SIZE, overlap: OVERLAP } })).toBe(2);
    expect(await passages()).toEqual(before);

    // chunk 60 of vidA changes: only the passages holding it are cut again
    const changed = vidA.map((c, i) => (i === 60 ? { ...c, text: 'a completely new sentence about saffron' } : c));
    await store('vidA', 'en', changed);
    expectExit(await cli(['search', 'saffron']), 0);
    const after = await passages();
    const holds60 = (p: Row) => p.first_chunk! <= 60 && p.last_chunk! >= 60;
    const oldA = before.filter((p) => p.doc === 'vidA');
    const newA = after.filter((p) => p.doc === 'vidA');
    const keptIds = new Set(oldA.filter((p) => !holds60(p)).map((p) => p.id));
    expect(oldA.filter(holds60).length).toBeGreaterThan(0);
    // every passage that did not hold chunk 60 is the same row (same id, not rewritten)
    for (const p of oldA.filter((q) => !holds60(q))) expect(newA.find((q) => q.id === p.id)).toEqual(p);
    // the new ones hold it, with the new text, and new ids
    const fresh = newA.filter((p) => !keptIds.has(p.id));
    expect(fresh.length).toBeGreaterThan(0);
    for (const p of fresh) {
      expect(holds60(p)).toBe(true);
      expect(p.id).toBeGreaterThan(Math.max(...before.map((q) => q.id)));
    }
    expect(fresh.some((p) => p.text.includes('about saffron'))).toBe(true);
    // the other documents untouched
    expect(after.filter((p) => p.doc !== 'vidA')).toEqual(before.filter((p) => p.doc !== 'vidA'));
  });
});

describe('export --passages', () => {
  it('--cursor writes what was cut since; --kind and --lang select; Parquet holds the same records', async () => {
    const first = join(dir, 'c1.jsonl');
    const r1 = await cli(['export', '--passages', '--format', 'jsonl', '--out', first, '--cursor', 'vec']);
    expectExit(r1, 0);
    expect(r1.stdout).toMatch(/wrote \d+ passages .* cursor vec created at passage \d+/);
    expect(jsonl(first)).toHaveLength((await passages()).length);

    const again = join(dir, 'c2.jsonl');
    expectExit(await cli(['export', '--passages', '--format', 'jsonl', '--out', again, '--cursor', 'vec']), 0);
    expect(jsonl(again)).toEqual([]);

    // vidB changes: its re-cut passages, and only they, come with the next run
    const before = new Set((await passages('vidB')).map((p) => p.id));
    await store('vidB', 'de', chunks(40, 'beta', { 3: 'ganz neuer Satz über Safran' }));
    const third = join(dir, 'c3.jsonl');
    expectExit(await cli(['export', '--passages', '--format', 'jsonl', '--out', third, '--cursor', 'vec']), 0);
    // the export does not drain: the indexer has not cut them yet
    expect(jsonl(third)).toEqual([]);
    await drainSearchIndex({ sql: database.sql, passages: { size: SIZE, overlap: OVERLAP } });
    expectExit(await cli(['export', '--passages', '--format', 'jsonl', '--out', third, '--cursor', 'vec']), 0);
    const nowB = await passages('vidB');
    const newB = nowB.filter((p) => !before.has(p.id));
    expect(newB.length).toBeGreaterThan(0);
    const written = jsonl(third);
    expect(written.filter((x) => x.removed === false).map((x) => x.id)).toEqual(
      newB.map((p) => p.id).sort((a, b) => a - b),
    );
    // and, first, each passage of vidB the first run wrote that went with the re-cut
    const goneB = [...before].filter((id) => !nowB.some((p) => p.id === id)).sort((a, b) => a - b);
    expect(goneB.length).toBeGreaterThan(0);
    const removed = written.slice(0, goneB.length);
    expect(removed.map((x) => x.id).sort((a, b) => Number(a) - Number(b))).toEqual(goneB);
    for (const x of removed) {
      expect(x).toEqual({
        id: x.id,
        kind: 'transcript',
        document: 'vidB',
        lang: 'de',
        n: null,
        text: null,
        tokens: null,
        sha256: null,
        start: null,
        end: null,
        headings: null,
        url: null,
        removed: true,
      });
    }
    expect(written.filter((x) => x.removed === true)).toHaveLength(goneB.length);

    // --lang de: only vidB's; --kind page: none (no page passages yet)
    const de = join(dir, 'de.jsonl');
    expectExit(
      await cli(['export', '--passages', '--format', 'jsonl', '--out', de, '--kind', 'video', '--lang', 'de']),
      0,
    );
    expect(new Set(jsonl(de).map((x) => x.document))).toEqual(new Set(['vidB']));
    const pages = join(dir, 'pages.jsonl');
    expectExit(await cli(['export', '--passages', '--format', 'jsonl', '--out', pages, '--kind', 'page']), 0);
    expect(jsonl(pages)).toEqual([]);

    const pq = join(dir, 'all.parquet');
    expectExit(await cli(['export', '--passages', '--format', 'parquet', '--out', pq]), 0);
    const rows = await passages();
    const read = await duck<Record<string, unknown>>(
      `select id, document, n, text, tokens, start, "end", url from read_parquet('${pq}') order by id`,
    );
    expect(read).toHaveLength(rows.length);
    const byId = [...rows].sort((a, b) => a.id - b.id);
    read.forEach((x, i) => {
      const p = byId[i]!;
      expect(x).toEqual({
        id: String(p.id),
        document: p.doc,
        n: String(p.n),
        text: p.text,
        tokens: String(p.tokens),
        start: p.start_s,
        end: p.end_s,
        url: `https://videos.example/watch?v=${p.doc}&t=${Math.floor(p.start_s ?? 0)}`,
      });
    });
  });

  it('a stored page is queued and cut by the indexer: within a section, with its headings and a link to its anchor; an unchanged page is not queued, an unchanged section keeps its ids', async () => {
    const page = (install: string) =>
      [
        '# Guide',
        'An introduction to the tool.',
        '## Getting started',
        Array.from({ length: 80 }, (_, i) => `Step ${i}: ${install}.`).join(' '),
        '## Troubleshooting',
        'When it fails, read the log first.',
      ].join('\n\n');
    const url = 'https://docs.example.test/guide';
    const row = (content: string) => ({
      url,
      name: 'Guide',
      description: null,
      ogUrl: null,
      content,
      countCharacters: content.length,
      sha256: pageSha256(content),
    });
    const origin = { jobId: 'job-page-1', sourceId: null };
    const queued = () =>
      database.sql<{ doc: string }[]>`select video_id as doc from search_index_queue where kind = 'page'`;
    await database.sql.begin((tx) => storePages(tx, origin, [row(page('install the package'))]));
    // the landing transaction only queues the page; the indexer cuts it
    expect(await queued()).toEqual([{ doc: url }]);
    await drainSearchIndex({ sql: database.sql, passages: { size: SIZE, overlap: OVERLAP } });
    expect(await queued()).toEqual([]);
    const read = () =>
      database.sql<
        {
          id: number;
          n: number;
          text: string;
          tokens: number;
          headings: string[];
          anchor: string | null;
          start_s: null;
        }[]
      >`
        select id::float8 as id, n, text, tokens, headings, anchor, start_s from passages where kind = 'page' order by n`;
    const before = await read();
    expect(before.length).toBeGreaterThan(3);
    for (const p of before) {
      expect(p.tokens).toBeLessThanOrEqual(SIZE);
      expect(p.start_s).toBeNull();
      if (p.text.startsWith('Step'))
        expect(p).toMatchObject({ headings: ['Guide', 'Getting started'], anchor: 'getting-started' });
    }
    expect(before.find((p) => p.text.includes('read the log'))).toMatchObject({
      headings: ['Guide', 'Troubleshooting'],
      anchor: 'troubleshooting',
    });

    const out = join(dir, 'pages.jsonl');
    expectExit(await cli(['export', '--passages', '--format', 'jsonl', '--out', out, '--kind', 'page']), 0);
    const records = jsonl(out);
    expect(records).toHaveLength(before.length);
    expect(records.find((x) => String(x.text).includes('read the log'))).toMatchObject({
      kind: 'page',
      document: url,
      start: null,
      end: null,
      headings: ['Guide', 'Troubleshooting'],
      url: `${url}#troubleshooting`,
    });

    // the same page again: nothing queued, nothing cut
    await database.sql.begin((tx) =>
      storePages(tx, { ...origin, jobId: 'job-page-1b' }, [row(page('install the package'))]),
    );
    expect(await queued()).toEqual([]);
    expect(await read()).toEqual(before);

    // the Getting started section changes: the other sections' passages keep their rows
    await database.sql.begin((tx) =>
      storePages(tx, { ...origin, jobId: 'job-page-2' }, [row(page('install it with npm'))]),
    );
    expect(await queued()).toEqual([{ doc: url }]);
    expectExit(await cli(['search', 'npm']), 0);
    const after = await read();
    const kept = after.filter((p) => before.some((b) => b.id === p.id));
    expect(before.filter((p) => p.anchor === 'getting-started').length).toBeGreaterThan(1);
    expect(kept.map((p) => p.anchor).sort()).toEqual(['guide', 'troubleshooting']);
    expect(after.filter((p) => p.anchor === 'getting-started').every((p) => p.text.includes('npm'))).toBe(true);
  });

  it('refuses what it cannot write, named', async () => {
    expectCleanError(
      await cli(['export', '--passages', '--format', 'csv', '--out', join(dir, 'x.csv')]),
      2,
      /--passages cannot be used with --format csv/,
    );
    expectCleanError(
      await cli([
        'export',
        '--passages',
        '--format',
        'jsonl',
        '--out',
        join(dir, 'x.jsonl'),
        '--since',
        '2024-01-01T00:00:00Z',
      ]),
      2,
      /--passages cannot be used with --since/,
    );
    expectCleanError(
      await cli(['status'], { PASSAGE_OVERLAP_TOKENS: '64' }),
      2,
      /PASSAGE_OVERLAP_TOKENS: invalid value 64: must be less than PASSAGE_TOKENS \(64\)/,
    );
  });
});
