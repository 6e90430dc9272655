/**
 * `export --format srt|vtt` (issue #33), as a user runs it: the CLI as processes against a
 * corpus backfilled from the simulator over real HTTP (one source with timed chunks, one plain
 * text), every file read back by parsers from npm (srt-validator, the W3C's webvtt-parser:
 * test/helpers/subtitle-readers.ts) and its cues compared with the stored chunks, text and times
 * to the millisecond. Then `--cursor`: after a sync that changed 3 transcripts and added 5
 * videos, the next run writes exactly those 8 files, and the one after none.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';
import { startCli, waitUntil } from '../helpers/proc.ts';
import { admin } from '../helpers/sim-http.ts';
import { readSrt, readVtt, type ReadCue } from '../helpers/subtitle-readers.ts';

let h: PipelineHarness;
let dir: string;
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

/** A channel as a source asking one language that every video of it has. */
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
  h = await createPipelineHarness('export_subtitles', {
    catalog: {
      channels: 2,
      channelSizes: [8, 5],
      shortsPerChannel: 0,
      livesPerChannel: 0,
      noTranscriptShare: 0,
      privateShare: 0,
      goneShare: 0,
    },
  });
  h.startWorkers(['poller', 'sink']);
  dir = mkdtempSync(join(tmpdir(), 'vsi-subtitles-'));
  chunked = await channelSource(0);
  plainText = await channelSource(1, '--text');
  await backfill(chunked.sourceId);
  await backfill(plainText.sourceId);
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface StoredChunk {
  text: string;
  offset: number;
  duration: number;
}

/** The stored transcripts, in (video_id, lang) order. */
async function stored(): Promise<{ video_id: string; lang: string; chunks: StoredChunk[] | null }[]> {
  return h.database.sql<{ video_id: string; lang: string; chunks: StoredChunk[] | null }[]>`
    select video_id, lang, chunks from transcripts order by video_id, lang`;
}

/**
 * The cues a transcript's chunks must read back as: each chunk from its offset for its duration,
 * with its text. The simulator's chunks are in order, never overlap, and have no text the
 * formats would change (checked here): each becomes exactly one cue.
 */
function expectedCues(chunks: StoredChunk[]): ReadCue[] {
  return chunks.map((c, i) => {
    expect(Number.isInteger(c.offset) && Number.isInteger(c.duration) && c.duration > 0).toBe(true);
    if (i + 1 < chunks.length) expect(c.offset + c.duration).toBeLessThanOrEqual(chunks[i + 1]!.offset);
    expect(c.text).not.toMatch(/-->|\n\s*\n|^\s|\s$|\r/);
    return { startMs: c.offset, endMs: c.offset + c.duration, text: c.text };
  });
}

const files = (d: string) => readdirSync(d).sort();

describe('export --format srt|vtt', () => {
  it.each(['srt', 'vtt'] as const)(
    '%s: one file per timed transcript, read back by an independent parser as the stored chunks; plain ones counted',
    async (format) => {
      const all = await stored();
      const timed = all.filter((t) => t.chunks !== null);
      const plain = all.filter((t) => t.chunks === null);
      // the corpus has what the comparison must cover
      expect(timed.length).toBeGreaterThanOrEqual(chunked.ids.length);
      expect(plain.length).toBe(plainText.ids.length);
      expect(timed.some((t) => t.chunks!.some((c) => c.text.includes('\n')))).toBe(true);
      expect(timed.some((t) => t.chunks!.some((c) => /[<>&]/.test(c.text)))).toBe(true);

      // a directory that does not exist yet, two levels down
      const out = join(dir, `all-${format}`, 'subs');
      const r = await ok(['export', '--format', format, '--out', out]);
      expect(r.stdout).toBe('');
      const cueCount = timed.reduce((n, t) => n + t.chunks!.length, 0);
      expect(r.stderr).toContain(`wrote ${timed.length} ${format} file(s) (${cueCount} cues,`);
      expect(r.stderr).toContain(
        `skipped ${plain.length} transcript(s) (no file written for them): ${plain.length} plain text (stored without timed chunks)`,
      );

      // names that sort as the records do; nothing else left in the directory (no temporary file)
      const names = timed.map((t) => `${t.video_id}.${t.lang}.${format}`);
      expect(files(out)).toEqual([...names].sort());
      for (const t of timed) {
        const text = readFileSync(join(out, `${t.video_id}.${t.lang}.${format}`), 'utf8');
        const back = format === 'srt' ? readSrt(text) : readVtt(text);
        expect(back.errors, `${t.video_id}.${t.lang}`).toEqual([]);
        expect(back.cues, `${t.video_id}.${t.lang}`).toEqual(expectedCues(t.chunks!));
        if (format === 'vtt') expect(text.startsWith(`WEBVTT\n\nNOTE\nLanguage: ${t.lang}\n\n`)).toBe(true);
      }
    },
    60_000,
  );

  it('--source and --lang narrow it: the plain-text source alone writes no file and says why', async () => {
    const out = join(dir, 'plain-only');
    const r = await ok([
      'export',
      '--format',
      'srt',
      '--out',
      out,
      '--source',
      String(plainText.sourceId),
      '--lang',
      plainText.lang,
    ]);
    expect(files(out)).toEqual([]);
    expect(r.stderr).toContain('wrote 0 srt file(s)');
    expect(r.stderr).toContain(`skipped ${plainText.ids.length} transcript(s)`);
  });

  it('--cursor writes only what changed since its last run: 3 changed transcripts and 5 new videos, then nothing', async () => {
    const first = join(dir, 'cursor-1');
    const r1 = await ok(['export', '--format', 'vtt', '--out', first, '--cursor', 'subs']);
    expect(r1.stderr).toContain('cursor subs created at event');
    const before = (await stored()).filter((t) => t.chunks !== null);
    expect(files(first).length).toBe(before.length);

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
    const after = await stored();
    for (const id of changed) {
      const was = before.find((t) => t.video_id === id)!.chunks;
      expect(after.find((t) => t.video_id === id)!.chunks, id).not.toEqual(was);
    }

    // the next run, into a directory of its own: exactly the changed and the new, as now stored
    const second = join(dir, 'cursor-2');
    const r2 = await ok(['export', '--format', 'vtt', '--out', second, '--cursor', 'subs']);
    expect(r2.stderr).toMatch(/cursor subs moved from event \d+ to \d+/);
    expect(files(second)).toEqual([...changed, ...fresh].map((id) => `${id}.${chunked.lang}.vtt`).sort());
    for (const t of after.filter((a) => [...changed, ...fresh].includes(a.video_id))) {
      const back = readVtt(readFileSync(join(second, `${t.video_id}.${t.lang}.vtt`), 'utf8'));
      expect(back.errors).toEqual([]);
      expect(back.cues).toEqual(expectedCues(t.chunks!));
    }

    // into the first directory: the changed files are replaced, the others left
    const r3 = await ok(['export', '--format', 'vtt', '--out', first, '--cursor', 'subs']);
    expect(r3.stderr).toContain('wrote 0 vtt file(s)');
    const third = join(dir, 'cursor-3');
    const r4 = await ok(['export', '--format', 'vtt', '--out', third, '--cursor', 'subs']);
    expect(r4.stderr).toContain('wrote 0 vtt file(s)');
    expect(files(third)).toEqual([]);
  }, 90_000);

  it('a video ID or language that could not be a file name gets no file, counted; nothing leaves the directory', async () => {
    const { sql } = h.database;
    const chunks = JSON.stringify([{ text: 'escape', offset: 0, duration: 1000 }]);
    const planted = [
      ['../../escaped1', 'en'],
      [`${chunked.ids[0]!}`, '../../x'],
      ['/tmp/abs00001', 'en'],
      ['aaaaaaaaaa.', 'en'],
    ] as const;
    for (const [videoId, lang] of planted) {
      await sql`insert into transcripts (video_id, lang, text, chunks, content_sha256)
        values (${videoId}, ${lang}, 'escape', ${chunks}::text::jsonb, 'x')`;
    }
    // a timed transcript whose chunks make no cue
    await sql`insert into transcripts (video_id, lang, text, chunks, content_sha256)
      values ('emptyChunks', 'en', '', '[]'::jsonb, 'x')`;
    try {
      const out = join(dir, 'nested', 'unsafe');
      const r = await ok(['export', '--format', 'srt', '--out', out]);
      expect(r.stderr).toContain(`${planted.length} a video ID or language that cannot be a file name`);
      expect(r.stderr).toContain('1 no usable timed chunk');
      expect(files(out).every((n) => /^[A-Za-z0-9_-]{11}\.[A-Za-z0-9-]+\.srt$/.test(n))).toBe(true);
      expect(files(join(dir, 'nested'))).toEqual(['unsafe']);
      expect(existsSync(join(dir, 'escaped1.en.srt'))).toBe(false);
      expect(existsSync('/tmp/abs00001.en.srt')).toBe(false);
    } finally {
      await sql`delete from transcripts where content_sha256 = 'x'`;
    }
  });

  it('a symbolic link planted at a file name is refused (exit 2 naming it), nothing written through it, no cursor moved', async () => {
    const [first] = (await stored()).filter((t) => t.chunks !== null);
    const out = join(dir, 'planted');
    mkdirSync(out);
    const victim = join(dir, 'precious.txt');
    writeFileSync(victim, 'precious\n');
    const link = join(out, `${first!.video_id}.${first!.lang}.srt`);
    symlinkSync(victim, link);
    expectCleanError(
      await cli(['export', '--format', 'srt', '--out', out, '--cursor', 'planted']),
      2,
      link,
      'symbolic link',
    );
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(readlinkSync(link)).toBe(victim);
    // no temporary file left behind
    expect(files(out).every((n) => !n.endsWith('.partial'))).toBe(true);
    const [cursor] = await h.database.sql`select 1 from export_cursors where name = 'planted'`;
    expect(cursor).toBeUndefined();
  });

  it('SIGTERM or SIGINT mid-export ends the process by that signal, leaves no temporary file and moves no cursor', async () => {
    const { sql } = h.database;
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const out = join(dir, `signal-${signal}`);
      // another session holds transcripts: the export makes its directory, then waits on its query
      const locker = await sql.reserve();
      await locker`begin`;
      await locker`lock table transcripts in access exclusive mode`;
      const p = startCli(['export', '--format', 'srt', '--out', out, '--cursor', `sig-${signal}`], h.env);
      try {
        await waitUntil(
          () => {
            if (!p.running()) throw new Error(`export ended before its directory was made:\n${p.stderr()}`);
            return existsSync(out) || undefined;
          },
          30_000,
          'the output directory',
        );
        p.kill(signal);
        const exit = await p.exited;
        expect(exit.signal ?? exit.code, signal).toBe(signal);
        expect(p.stderr()).toContain('interrupted');
        expect(files(out)).toEqual([]);
      } finally {
        p.kill('SIGKILL');
        await locker`rollback`;
        locker.release();
      }
      const [cursor] = await sql`select 1 from export_cursors where name = ${`sig-${signal}`}`;
      expect(cursor).toBeUndefined();
    }
  }, 90_000);

  it('refuses bad usage with exit 2, naming the option, the value and what is valid', async () => {
    for (const format of ['srt', 'vtt']) {
      expectCleanError(
        await cli(['export', '--format', format, '--out', '-']),
        2,
        '--out -',
        `--format ${format}`,
        'directory',
        'jsonl',
      );
    }
    const file = join(dir, 'a-file.srt');
    writeFileSync(file, 'keep\n');
    expectCleanError(await cli(['export', '--format', 'srt', '--out', file]), 2, `--out ${file}`, 'not a directory');
    expect(readFileSync(file, 'utf8')).toBe('keep\n');
    expectCleanError(await cli(['export', '--format', 'vtt', '--out', dir, '--chunks']), 2, '--chunks', 'vtt');
    expectCleanError(
      await cli(['export', '--format', 'srt', '--out', dir, '--csv-raw-formulas']),
      2,
      '--csv-raw-formulas',
      'srt',
    );
    expectCleanError(
      await cli(['export', '--format', 'srt', '--out', dir, '--cursor', 's9', '--since', '2024-01-01']),
      2,
      '--cursor',
      '--since',
    );
    expectCleanError(await cli(['export', '--format', 'webvtt', '--out', dir]), 2, '--format', 'webvtt', 'srt, vtt');
    const help = await ok(['export', '--help']);
    expect(help.stdout).toContain('jsonl, parquet, csv, srt, vtt');
  });
});
