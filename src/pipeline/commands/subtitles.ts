/**
 * `export --format srt|vtt --out DIR` (issue #33): one subtitle file per (video, transcript
 * language), `<videoId>.<lang>.srt` or `.vtt`, made from the transcript's timed chunks
 * (src/domain/subtitles.ts). The records are the ones `export` writes (src/db/export.ts
 * `exportRecords`: the same --source, --lang, --since and --cursor), read in one snapshot.
 *
 * - A transcript stored as plain text (no chunks), or whose chunks make no cue, gets no file and
 *   is counted; so is one whose video ID or language could not be a file name (video IDs are
 *   11 characters of A-Z a-z 0-9 _ - by src/api/ids.ts; languages letters, digits and `-`): no
 *   name is ever built from anything else, so none can leave the directory.
 * - `--out` is a directory, created if missing; a path that exists and is not a directory is
 *   refused before anything is read.
 * - Each file is written atomically (atomic-file.ts: a random temporary name beside it, a target
 *   that is not a regular file refused, its mode kept, fsynced, renamed into place). A failed or
 *   interrupted run leaves the files it completed and the others as they were, and moves no cursor.
 * - With `--cursor`, the cursor moves after the last file is in place, as for the other formats:
 *   the next run writes the files of what changed since. A file is never deleted.
 */
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isVideoId } from '../../api/ids.ts';
import type { Sql } from '../../db/connection.ts';
import {
  exportRecords,
  inExportSnapshot,
  readExportCursor,
  saveExportCursor,
  snapshotLastEventId,
  sourceExists,
} from '../../db/export.ts';
import { SourceNotFoundError } from '../../db/sources.ts';
import { cuesFromChunks, formatSubtitles, type SubtitleFormat } from '../../domain/subtitles.ts';
import type { Logger } from '../../log.ts';
import { describeTarget, inspectTarget, NotRegularFileError, openAtomicFile, type AtomicFile } from './atomic-file.ts';
import { EXPORT_CURSOR_ROWS, ExportOutputError } from './export.ts';

/** A language as it may appear in a file name: letters, digits and inner `-` (en, pt-BR, zh-Hant). */
const FILE_LANG_RE = /^[A-Za-z0-9]{1,8}(?:-[A-Za-z0-9]{1,8}){0,4}$/;

/** Why a transcript got no file. */
export type SubtitleSkipReason = 'plain-text' | 'no-cues' | 'unsafe-name';

export interface SubtitleExportOptions {
  format: SubtitleFormat;
  /** the directory (created if missing) */
  out: string;
  sourceId?: number | undefined;
  lang?: string | undefined;
  /** ISO 8601 with a zone */
  since?: string | undefined;
  cursor?: string | undefined;
}

export interface SubtitleExportResult {
  /** files written */
  files: number;
  cues: number;
  bytes: number;
  /** transcripts that got no file, by reason */
  skipped: Record<SubtitleSkipReason, number>;
  ms: number;
  /** the event id the output covers (the cursor's new position) */
  lastEventId: number;
  /** where the run started from: the cursor's previous position, or null for a whole export */
  afterEventId: number | null;
}

export interface SubtitleExportDeps {
  sql: Sql;
  log: Logger;
  /** aborted on SIGINT/SIGTERM: the file being written is removed at once (the command then ends the process) */
  interrupted?: AbortSignal;
}

/** `<videoId>.<lang>.<format>`, or undefined when either part could not be a file name. */
export function subtitleFileName(videoId: string, lang: string, format: SubtitleFormat): string | undefined {
  if (!isVideoId(videoId) || !FILE_LANG_RE.test(lang)) return undefined;
  return `${videoId}.${lang}.${format}`;
}

/** A usable `--out`: `-` and a path that is not a directory are refused; a missing one is created. */
async function prepareDirectory(o: SubtitleExportOptions, create: boolean): Promise<void> {
  if (o.out === '-') {
    throw new ExportOutputError(
      `--out -: --format ${o.format} writes one file per video and language, not a stream; give a directory (created if missing)`,
    );
  }
  // stat, not lstat: a symbolic link to a directory is that directory (each file in it is still
  // checked by atomic-file.ts, which never writes through a link)
  const st = await stat(o.out).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined;
    throw new ExportOutputError(`--out ${o.out}: cannot use it (${e.code ?? 'error'}: ${e.message})`);
  });
  if (st?.isDirectory()) return;
  if (st !== undefined) {
    throw new ExportOutputError(
      `--out ${o.out}: is ${describeTarget(await inspectTarget(o.out))}, not a directory; --format ${o.format} writes one file per video and language into a directory (created if missing)`,
    );
  }
  if (!create) return;
  await mkdir(o.out, { recursive: true }).catch((e: NodeJS.ErrnoException) => {
    throw new ExportOutputError(`--out ${o.out}: cannot create the directory (${e.code ?? 'error'}: ${e.message})`);
  });
}

async function writeAtomically(path: string, text: string, onOpen: (f: AtomicFile | undefined) => void) {
  let file: AtomicFile;
  try {
    file = await openAtomicFile(path);
  } catch (e: unknown) {
    if (e instanceof NotRegularFileError) {
      throw new ExportOutputError(
        `--out: ${path} is ${describeTarget(e.target)}, not a regular file; it was left as it was and the export stopped (remove it and run again)`,
      );
    }
    throw e;
  }
  onOpen(file);
  try {
    file.stream.write(text);
    await file.commit();
  } catch (e: unknown) {
    await file.discard();
    if (e instanceof NotRegularFileError) {
      throw new ExportOutputError(
        `--out: ${path} became ${describeTarget(e.target)} while it was written; left as it was`,
      );
    }
    throw e;
  } finally {
    onOpen(undefined);
  }
}

export async function runSubtitleExport(
  deps: SubtitleExportDeps,
  o: SubtitleExportOptions,
): Promise<SubtitleExportResult> {
  const { sql, log } = deps;
  // before anything is read: a bad --out is refused at once
  await prepareDirectory(o, false);
  if (o.sourceId !== undefined && !(await sourceExists(sql, o.sourceId))) throw new SourceNotFoundError(o.sourceId);
  const afterEventId = o.cursor !== undefined ? ((await readExportCursor(sql, o.cursor)) ?? null) : null;
  await prepareDirectory(o, true);
  const startedAt = Date.now();
  const skipped: Record<SubtitleSkipReason, number> = { 'plain-text': 0, 'no-cues': 0, 'unsafe-name': 0 };
  let files = 0;
  let cues = 0;
  let bytes = 0;
  let current: AtomicFile | undefined;
  const onInterrupt = () => current?.discardSync();
  deps.interrupted?.addEventListener('abort', onInterrupt, { once: true });
  let lastEventId: number;
  try {
    lastEventId = await inExportSnapshot(sql, async (tx) => {
      const hi = await snapshotLastEventId(tx);
      const query = exportRecords(tx, {
        sourceId: o.sourceId,
        lang: o.lang,
        since: o.since,
        afterEventId: afterEventId ?? undefined,
        chunks: true,
      });
      for await (const rows of query.cursor(EXPORT_CURSOR_ROWS)) {
        for (const r of rows) {
          if (deps.interrupted?.aborted) throw new Error('export interrupted');
          if (r.chunks === null || r.chunks === undefined) {
            skipped['plain-text']++;
            continue;
          }
          const parsed: unknown = JSON.parse(r.chunks);
          const made = Array.isArray(parsed) ? cuesFromChunks(parsed) : [];
          if (made.length === 0) {
            skipped['no-cues']++;
            continue;
          }
          const name = subtitleFileName(r.video_id, r.lang, o.format);
          if (name === undefined) {
            skipped['unsafe-name']++;
            log.warn(
              { event: 'export.subtitle_skipped', videoId: r.video_id, lang: r.lang, reason: 'unsafe-name' },
              'a video ID or language that cannot be a file name: no subtitle file',
            );
            continue;
          }
          const text = formatSubtitles(o.format, made, r.lang);
          await writeAtomically(join(o.out, name), text, (f) => (current = f));
          files++;
          cues += made.length;
          bytes += Buffer.byteLength(text);
        }
      }
      return hi;
    });
  } finally {
    deps.interrupted?.removeEventListener('abort', onInterrupt);
  }
  // only now: every file is in place
  if (o.cursor !== undefined) await saveExportCursor(sql, o.cursor, lastEventId, files);
  const result: SubtitleExportResult = {
    files,
    cues,
    bytes,
    skipped,
    ms: Date.now() - startedAt,
    lastEventId,
    afterEventId,
  };
  log.info(
    {
      event: 'export.done',
      format: o.format,
      out: o.out,
      records: files,
      cues,
      bytes,
      skipped,
      ms: result.ms,
      cursor: o.cursor ?? null,
      afterEventId,
      lastEventId,
    },
    'subtitles written',
  );
  return result;
}
