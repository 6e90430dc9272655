/**
 * `export --format srt|vtt --out DIR` (issue #33): the subtitle formats of `export`, whose
 * options src/cli/export.ts parses and hands over here; the run itself is
 * src/pipeline/commands/subtitles.ts. Everything this prints goes to stderr (stdout stays empty):
 * how many files were written where, and how many transcripts got none, and why.
 *
 * SIGINT or SIGTERM while a file is written removes its temporary copy; the files already written
 * stay (each complete), the cursor where it was; the process then ends by the same signal.
 */
import { ExportOutputError } from '../pipeline/commands/export.ts';
import { runSubtitleExport, type SubtitleSkipReason } from '../pipeline/commands/subtitles.ts';
import type { SubtitleFormat } from '../domain/subtitles.ts';
import { createContext } from './context.ts';
import { UsageError } from './exit.ts';

export interface SubtitleCliOptions {
  format: SubtitleFormat;
  out: string;
  source?: number | undefined;
  lang?: string | undefined;
  since?: string | undefined;
  cursor?: string | undefined;
  chunks: boolean;
}

/** What each skip reason means, for the summary line. */
const SKIP_REASONS: Record<SubtitleSkipReason, string> = {
  'plain-text': 'plain text (stored without timed chunks)',
  'no-cues': 'no usable timed chunk',
  'unsafe-name': 'a video ID or language that cannot be a file name',
};

const INTERRUPTING_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

function onInterrupt(out: string): { interrupted: AbortSignal; stop(): void } {
  const ac = new AbortController();
  const handlers = INTERRUPTING_SIGNALS.map((signal) => {
    const handler = () => {
      ac.abort(signal);
      process.stderr.write(
        `export interrupted (${signal}): the files already written in ${out} stay, the one being written was removed; the cursor did not move\n`,
      );
      stop();
      process.kill(process.pid, signal);
    };
    process.once(signal, handler);
    return [signal, handler] as const;
  });
  const stop = () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
  return { interrupted: ac.signal, stop };
}

/** `skipped 6 transcript(s): 5 plain text (...), 1 no usable timed chunk` or '' when none was. */
export function skippedLine(skipped: Record<SubtitleSkipReason, number>): string {
  const parts = (Object.keys(SKIP_REASONS) as SubtitleSkipReason[])
    .filter((k) => skipped[k] > 0)
    .map((k) => `${skipped[k]} ${SKIP_REASONS[k]}`);
  const total = Object.values(skipped).reduce((a, b) => a + b, 0);
  return total === 0 ? '' : `skipped ${total} transcript(s) (no file written for them): ${parts.join(', ')}`;
}

export async function exportSubtitles(o: SubtitleCliOptions): Promise<void> {
  if (o.chunks) {
    throw new UsageError(
      `--chunks does not apply to --format ${o.format} (a subtitle file is always made from the timed chunks)`,
    );
  }
  if (o.out === '-') {
    throw new UsageError(
      `--out - cannot be used with --format ${o.format}: it writes one file per video and language; give a directory (created if missing), or use --format jsonl, csv or parquet for stdout`,
    );
  }
  const ctx = createContext();
  const signals = onInterrupt(o.out);
  try {
    const r = await runSubtitleExport(
      { sql: ctx.db().sql, log: ctx.log, interrupted: signals.interrupted },
      { format: o.format, out: o.out, sourceId: o.source, lang: o.lang, since: o.since, cursor: o.cursor },
    ).catch((e: unknown) => {
      throw e instanceof ExportOutputError ? new UsageError(e.message) : e;
    });
    const from =
      o.cursor === undefined
        ? ''
        : r.afterEventId === null
          ? `; cursor ${o.cursor} created at event ${r.lastEventId}`
          : `; cursor ${o.cursor} moved from event ${r.afterEventId} to ${r.lastEventId}`;
    process.stderr.write(
      `wrote ${r.files} ${o.format} file(s) (${r.cues} cues, ${(r.bytes / 1e6).toFixed(1)} MB) to ${o.out} in ${(r.ms / 1000).toFixed(1)} s${from}\n`,
    );
    const skipped = skippedLine(r.skipped);
    if (skipped !== '') process.stderr.write(`${skipped}\n`);
  } finally {
    signals.stop();
    await ctx.close();
  }
}
