/**
 * Passages of media (issue #31) against the simulator over real HTTP: a media source's
 * transcripts (TikTok, Instagram, a media file; one without speech) are cut by the search indexer
 * from the search queue, each passage at its chunks' offsets in the language stored, its link the
 * media URL (a media file's at `#t=`); a re-bought unchanged transcript cuts nothing; a changed one
 * re-cuts only its own passages, keeping the others' ids; a deleted media item's passages go;
 * `export --passages --kind media --cursor` writes the passages cut since and, first, a removal
 * record for each passage written before that went; `prune` drops old removals.
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeMediaTranscript } from '../../src/db/media.ts';
import { tokenCount } from '../../src/domain/passages.ts';
import { expectExit } from '../helpers/cli.ts';
import { once } from '../helpers/once.ts';
import {
  createPipelineHarness,
  FAST_PIPELINE,
  runCli,
  type CliResult,
  type PipelineHarness,
} from '../helpers/pipeline.ts';

const SIZE = 48;
const OVERLAP = 12;

let h: PipelineHarness;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  h = await createPipelineHarness('media-passages', {
    catalog: { channels: 1, channelSizes: [1], noTranscriptShare: 0, privateShare: 0, goneShare: 0 },
    jobs: { queuedMs: 100, itemsPerSecond: 2000, transcriptJobMs: 200 },
  });
  // the in-process indexer (beside the poller) cuts at the size the CLI processes are given
  h.deps.settings = { ...FAST_PIPELINE, passages: { size: SIZE, overlap: OVERLAP } };
  h.startWorkers(['poller', 'sink']);
  env = { ...h.env, PASSAGE_TOKENS: String(SIZE), PASSAGE_OVERLAP_TOKENS: String(OVERLAP) };
  dir = mkdtempSync(join(tmpdir(), 'vsi-media-passages-'));
}, 60_000);

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await h?.close();
});

const cli = (args: string[]): Promise<CliResult> => runCli(args, env, 120_000);

/** The first URL of `make(n)` for which `ok` holds, by the simulator's own facts. */
function pick(make: (n: number) => string, ok: (url: string) => boolean): string {
  for (let n = 1000; n < 2000; n++) if (ok(make(n))) return make(n);
  throw new Error('no such URL in the simulator');
}

let picked: ReturnType<typeof pickMedia> | undefined;
const media = () => (picked ??= pickMedia());
function pickMedia() {
  const speech = (u: string) => h.sim.media.hasSpeech(u);
  return {
    tiktok: pick((n) => `https://www.tiktok.com/@user/video/${n}`, speech),
    reel: pick((n) => `https://www.instagram.com/reel/R${n}`, speech),
    file: pick((n) => `https://cdn.example.test/clips/${n}.mp4`, speech),
    silent: pick(
      (n) => `https://www.tiktok.com/@user/video/${n}`,
      (u) => !speech(u),
    ),
  };
}

interface Chunk {
  text: string;
  offset: number;
  duration: number;
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
  h.database.sql<Row[]>`
    select id::float8 as id, doc, lang, n, text, tokens, sha256, start_s, end_s, first_chunk, last_chunk, xmin::text as xmin
    from passages where kind = 'media' and (${doc ?? null}::text is null or doc = ${doc ?? null}::text)
    order by doc, lang, n`;
const stored = async (url: string) => {
  const [m] = await h.database.sql<{ lang: string | null; content: Chunk[] }[]>`
    select transcript_lang as lang, transcript_content as content from media where url = ${url}`;
  return m!;
};
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

const synced = once(async () => {
  const m = media();
  const add = await cli(['sources', 'add', 'media', m.tiktok, m.reel, m.file, m.silent]);
  expectExit(add, 0);
  const sourceId = Number(/^source (\d+) added/m.exec(add.stdout)![1]);
  expectExit(await cli(['backfill', '--source', String(sourceId), '--timeout', '60s']), 0);
  return { sourceId };
});

/** A removal record as `export --passages --cursor` writes it. */
const removal = (id: unknown, document: string, lang: string) => ({
  id,
  kind: 'media',
  document,
  lang,
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

describe('media passages', () => {
  it('backfill leaves each media transcript cut, at its chunks’ moments, in its language; none for one without speech', async () => {
    await synced();
    const m = media();
    for (const url of [m.tiktok, m.reel, m.file]) {
      const t = await stored(url);
      expect(t.content.length).toBeGreaterThan(0);
      const rows = await passages(url);
      expect(rows.length, url).toBeGreaterThan(1);
      for (const p of rows) {
        expect(p.lang).toBe(t.lang ?? '');
        expect(p.tokens).toBe(tokenCount(p.text));
        expect(p.tokens).toBeLessThanOrEqual(SIZE);
        const held = t.content.slice(p.first_chunk!, p.last_chunk! + 1);
        // its chunks' text, but for the words of the one before it repeats and a chunk split in parts
        expect(held.map((c) => c.text.trim()).join(' ')).toContain(p.text);
        for (const c of held.slice(1, -1)) expect(p.text).toContain(c.text.trim());
        expect(p.start_s).toBe(held[0]!.offset / 1000);
        expect(p.end_s).toBe((held.at(-1)!.offset + held.at(-1)!.duration) / 1000);
      }
      // every chunk in some passage, in order
      expect(rows[0]!.first_chunk).toBe(0);
      expect(rows.at(-1)!.last_chunk).toBe(t.content.length - 1);
      for (let i = 1; i < rows.length; i++)
        expect(rows[i]!.first_chunk!).toBeLessThanOrEqual(rows[i - 1]!.last_chunk! + 1);
    }
    expect(await passages(m.silent)).toEqual([]);
    expect(await h.database.sql`select 1 from search_index_queue`).toHaveLength(0);
  });

  it('media passages carry an empty tsvector (migrations/0036); search --kind media still finds their words', async () => {
    await synced();
    const m = media();
    const tsvs = await h.database.sql<{ doc: string; tsv: string }[]>`
      select doc, tsv::text as tsv from passages where kind = 'media' order by doc, n`;
    expect(tsvs.length).toBeGreaterThan(0);
    for (const r of tsvs) expect(r.tsv, r.doc).toBe('');
    // words of one chunk of a passage: media search finds a chunk (media_segments) holding them
    const [first] = await passages(m.tiktok);
    const chunk = (await stored(m.tiktok)).content[first!.first_chunk!]!.text;
    const words = chunk
      .split(/\s+/)
      .filter((w) => /^[a-z]{4,}$/i.test(w))
      .slice(0, 3);
    expect(words.length, chunk).toBeGreaterThan(0);
    for (const w of words) expect(first!.text).toContain(w);
    const r = await cli(['search', words.join(' '), '--kind', 'media', '--json', '--limit', '50']);
    expectExit(r, 0);
    const urls = r.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { url: string }).url);
    expect(urls, r.stdout).toContain(m.tiktok);
  });

  it('export --passages --kind media: each with its moment and link (a media file’s at #t=, a post’s plain)', async () => {
    await synced();
    const m = media();
    const out = join(dir, 'media.jsonl');
    expectExit(await cli(['export', '--passages', '--kind', 'media', '--format', 'jsonl', '--out', out]), 0);
    const rows = await passages();
    const records = jsonl(out);
    expect(records).toHaveLength(rows.length);
    const byId = new Map(records.map((x) => [x.id, x]));
    for (const p of rows) {
      expect(byId.get(p.id)).toEqual({
        id: p.id,
        kind: 'media',
        document: p.doc,
        lang: p.lang,
        n: p.n,
        text: p.text,
        tokens: p.tokens,
        sha256: p.sha256,
        start: p.start_s,
        end: p.end_s,
        headings: null,
        url: p.doc === m.file ? `${m.file}#t=${Math.floor(p.start_s!)}` : p.doc,
        removed: false,
      });
    }
    // --kind video writes none of them
    const videos = join(dir, 'videos.jsonl');
    expectExit(await cli(['export', '--passages', '--kind', 'video', '--format', 'jsonl', '--out', videos]), 0);
    expect(jsonl(videos).filter((x) => x.kind === 'media')).toEqual([]);
  });

  it('a re-bought unchanged transcript cuts 0 passages; a changed one re-cuts only itself, keeping its unchanged passages’ ids', async () => {
    const { sourceId } = await synced();
    const m = media();
    const before = await passages();
    const boughtAt = async () => {
      const [r] = await h.database.sql<{ state: string; at: Date }[]>`
        select transcript_state as state, transcript_at as at from media where url = ${m.tiktok}`;
      return r!;
    };
    const first = await boughtAt();
    // the TikTok's job result counted lost: the next sync buys the same transcript again
    await h.database.sql`update media set transcript_state = 'expired' where url = ${m.tiktok}`;
    expectExit(await cli(['backfill', '--source', String(sourceId), '--timeout', '60s']), 0);
    const again = await boughtAt();
    expect(again.state).toBe('stored');
    expect(again.at.getTime()).toBeGreaterThan(first.at.getTime());
    expect(await h.database.sql`select 1 from search_index_queue`).toHaveLength(0);
    // no row rewritten (same xmin)
    expect(await passages()).toEqual(before);

    // chunk k of the reel says something new: only the passages holding it are cut again
    const t = await stored(m.reel);
    const k = Math.floor(t.content.length / 2);
    const changed = t.content.map((c, i) => (i === k ? { ...c, text: 'a completely new sentence about saffron' } : c));
    await h.database.sql.begin((tx) =>
      storeMediaTranscript(tx, { jobId: 'job-media-passages', sourceId }, m.reel, {
        content: changed,
        lang: t.lang,
        mode: 'native',
      }),
    );
    expectExit(await cli(['search', 'saffron']), 0);
    const after = await passages();
    const oldReel = before.filter((p) => p.doc === m.reel);
    const newReel = after.filter((p) => p.doc === m.reel);
    // every passage before chunk k is the same row (same id, not rewritten)
    const beforeK = oldReel.filter((p) => p.last_chunk! < k);
    expect(beforeK.length).toBeGreaterThan(0);
    for (const p of beforeK) expect(newReel.find((q) => q.id === p.id)).toEqual(p);
    // a passage of the new cut keeps its id exactly when its text and first chunk are an old one's
    const oldMax = Math.max(...before.map((p) => p.id));
    for (const p of newReel) {
      const same = oldReel.find((q) => q.text === p.text && q.first_chunk === p.first_chunk);
      if (same) expect(p.id).toBe(same.id);
      else expect(p.id).toBeGreaterThan(oldMax);
    }
    const fresh = newReel.filter((p) => p.id > oldMax);
    expect(fresh.length).toBeGreaterThan(0);
    expect(fresh.some((p) => p.text.includes('about saffron'))).toBe(true);
    expect(newReel.filter((p) => p.first_chunk! <= k && p.last_chunk! >= k).every((p) => p.id > oldMax)).toBe(true);
    // the other media untouched
    expect(after.filter((p) => p.doc !== m.reel)).toEqual(before.filter((p) => p.doc !== m.reel));
  });
});

describe('export --passages --cursor: removed passages', () => {
  it('a later run writes, first, a removal per passage it wrote before that went (re-cut or deleted); Parquet too; not without --cursor', async () => {
    const { sourceId } = await synced();
    const m = media();
    const first = join(dir, 'c1.jsonl');
    expectExit(
      await cli(['export', '--passages', '--kind', 'media', '--format', 'jsonl', '--out', first, '--cursor', 'vec']),
      0,
    );
    expect(jsonl(first).length).toBe((await passages()).length);
    expect(jsonl(first).every((x) => x.removed === false)).toBe(true);

    // the TikTok's transcript changes at its first chunk; the file is deleted
    const t = await stored(m.tiktok);
    const beforeTiktok = await passages(m.tiktok);
    const filePassages = await passages(m.file);
    expect(filePassages.length).toBeGreaterThan(0);
    await h.database.sql.begin((tx) =>
      storeMediaTranscript(tx, { jobId: 'job-media-passages-2', sourceId }, m.tiktok, {
        content: t.content.map((c, i) => (i === 0 ? { ...c, text: 'an opening line about cardamom' } : c)),
        lang: t.lang,
        mode: 'native',
      }),
    );
    await h.database.sql`delete from media where url = ${m.file}`;
    expect(await passages(m.file)).toEqual([]);
    expectExit(await cli(['search', 'cardamom']), 0);

    const second = join(dir, 'c2.jsonl');
    expectExit(
      await cli(['export', '--passages', '--kind', 'media', '--format', 'jsonl', '--out', second, '--cursor', 'vec']),
      0,
    );
    const written = jsonl(second);
    const nowTiktok = await passages(m.tiktok);
    const goneTiktok = beforeTiktok.filter((p) => !nowTiktok.some((q) => q.id === p.id));
    expect(goneTiktok.length).toBeGreaterThan(0);
    const removed = written.filter((x) => x.removed === true);
    const expected = [
      ...goneTiktok.map((p) => removal(p.id, m.tiktok, p.lang)),
      ...filePassages.map((p) => removal(p.id, m.file, p.lang)),
    ];
    expect(removed.sort((a, b) => Number(a.id) - Number(b.id))).toEqual(
      expected.sort((a, b) => Number(a.id) - Number(b.id)),
    );
    // removals first, then the new passages (and only those)
    expect(written.slice(0, removed.length).every((x) => x.removed === true)).toBe(true);
    const freshIds = nowTiktok.filter((p) => !beforeTiktok.some((q) => q.id === p.id)).map((p) => p.id);
    expect(written.slice(removed.length).map((x) => x.id)).toEqual(freshIds.sort((a, b) => a - b));

    // nothing since: nothing written
    const third = join(dir, 'c3.jsonl');
    expectExit(
      await cli(['export', '--passages', '--kind', 'media', '--format', 'jsonl', '--out', third, '--cursor', 'vec']),
      0,
    );
    expect(jsonl(third)).toEqual([]);

    // without --cursor: the passages as they are, no removal
    const all = join(dir, 'all.jsonl');
    expectExit(await cli(['export', '--passages', '--kind', 'media', '--format', 'jsonl', '--out', all]), 0);
    expect(jsonl(all).filter((x) => x.removed !== false)).toEqual([]);

    // Parquet: the same records through a cursor of its own, started before the change below
    const pq1 = join(dir, 'p1.parquet');
    expectExit(
      await cli(['export', '--passages', '--kind', 'media', '--format', 'parquet', '--out', pq1, '--cursor', 'pq']),
      0,
    );
    const reelIds = (await passages(m.reel)).map((p) => p.id);
    await h.database.sql`delete from media where url = ${m.reel}`;
    const pq2 = join(dir, 'p2.parquet');
    expectExit(
      await cli(['export', '--passages', '--kind', 'media', '--format', 'parquet', '--out', pq2, '--cursor', 'pq']),
      0,
    );
    const read = await duck<Record<string, unknown>>(
      `select id, kind, document, n, text, url, removed from read_parquet('${pq2}') order by id`,
    );
    expect(read).toEqual(
      [...reelIds]
        .sort((a, b) => a - b)
        .map((id) => ({
          id: String(id),
          kind: 'media',
          document: m.reel,
          n: null,
          text: null,
          url: null,
          removed: true,
        })),
    );
  });

  it('prune drops removals older than HISTORY_RETENTION_DAYS, and only those', async () => {
    const { sourceId } = await synced();
    const m = media();
    // a change of the TikTok's second chunk removes at least the passages that held it
    const t = await stored(m.tiktok);
    await h.database.sql.begin((tx) =>
      storeMediaTranscript(tx, { jobId: 'job-media-passages-3', sourceId }, m.tiktok, {
        content: t.content.map((c, i) => (i === 1 ? { ...c, text: 'a second line about nutmeg' } : c)),
        lang: t.lang,
        mode: 'native',
      }),
    );
    expectExit(await cli(['search', 'nutmeg']), 0);
    const count = async () =>
      (await h.database.sql<{ n: number }[]>`select count(*)::int as n from passage_removals`)[0]!.n;
    const n = await count();
    expect(n).toBeGreaterThan(0);
    await h.database.sql`
      update passage_removals set removed_at = now() - interval '200 days'
      where id = (select min(id) from passage_removals)`;
    const r = await cli(['prune']);
    expectExit(r, 0);
    expect(r.stdout).toMatch(/^passage_removals\s+1\s+.*\(HISTORY_RETENTION_DAYS=180\)$/m);
    expect(await count()).toBe(n - 1);
  });
});
