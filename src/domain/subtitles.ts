/**
 * Subtitle cues from a transcript's timed chunks, and their SRT and WebVTT text (issue #33,
 * `export --format srt|vtt`). Pure: no I/O; the files are written by
 * src/pipeline/commands/subtitles.ts.
 *
 * A stored chunk is `{text, offset, duration}`, offset and duration in milliseconds (the API's
 * TranscriptChunkSchema), kept as delivered, so each field is checked here again:
 *
 * - times are rounded to the millisecond (the end is offset + duration); a negative offset
 *   starts at 0; a chunk without a finite offset, or whose text is empty once cleaned, makes no
 *   cue;
 * - cues are in start order (a stable sort: chunks delivered out of order are put in order);
 *   chunks that start at the same millisecond become one cue, their lines in delivery order,
 *   ending at the latest end;
 * - a chunk without an end (no duration, or an end not after its start) ends where the next
 *   cue starts, or DEFAULT_CUE_MS after its start when it is the last;
 * - a cue that runs past the next one's start is cut there, so cues never overlap (rolling
 *   captions would otherwise show two lines at once, and some players drop or reorder overlaps);
 *   every cue is at least 1 ms long, since the next start is later than its own;
 * - text: line breaks of every kind become `\n`, control characters are dropped, tabs become
 *   spaces, each line is trimmed and empty lines are dropped (a blank line ends a cue in both
 *   formats). SRT also turns `-->` (and longer arrows) into `->`, which a reader would take for
 *   a timing line; WebVTT escapes `&`, `<` and `>` (so `-->` cannot occur either).
 */

export const SUBTITLE_FORMATS = ['srt', 'vtt'] as const;
export type SubtitleFormat = (typeof SUBTITLE_FORMATS)[number];

export function isSubtitleFormat(format: string): format is SubtitleFormat {
  return (SUBTITLE_FORMATS as readonly string[]).includes(format);
}

/** How long the last cue lasts when its chunk has no duration, ms: about one caption line. */
export const DEFAULT_CUE_MS = 3000;

export interface Cue {
  /** ms from the start of the video */
  startMs: number;
  /** ms, always > startMs */
  endMs: number;
  /** cleaned: non-empty lines joined by `\n` (not yet escaped for a format) */
  text: string;
}

/** Line breaks of every kind Unicode and the usual players know. */
const LINE_BREAKS = /\r\n?|[\u000b\u000c\u0085\u2028\u2029]/g;
/** C0 and C1 controls (but tab and line feed) and DEL. */
const CONTROLS = /[\u0000-\u0008\u000e-\u001f\u007f-\u0084\u0086-\u009f]/g;

/** The cue text of a chunk's text: lines trimmed, no empty line, no control characters. */
export function cleanCueText(text: string): string {
  return text
    .replace(LINE_BREAKS, '\n')
    .replace(CONTROLS, '')
    .replaceAll('\t', ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join('\n');
}

interface Timed {
  startMs: number;
  /** undefined: the chunk says nothing usable about its end */
  endMs: number | undefined;
  text: string;
}

function timedOf(chunk: unknown): Timed | undefined {
  if (typeof chunk !== 'object' || chunk === null) return undefined;
  const { text, offset, duration } = chunk as { text?: unknown; offset?: unknown; duration?: unknown };
  if (typeof text !== 'string' || typeof offset !== 'number' || !Number.isFinite(offset)) return undefined;
  const cleaned = cleanCueText(text);
  if (cleaned === '') return undefined;
  const startMs = Math.max(0, Math.round(offset));
  const end = typeof duration === 'number' && Number.isFinite(duration) ? Math.round(offset + duration) : undefined;
  return { startMs, endMs: end !== undefined && end > startMs ? end : undefined, text: cleaned };
}

/** The cues of a transcript's stored chunks (see the rules above); [] when none is usable. */
export function cuesFromChunks(chunks: readonly unknown[]): Cue[] {
  const timed = chunks.map(timedOf).filter((t): t is Timed => t !== undefined);
  // Array.prototype.sort is stable: equal starts keep their delivery order
  timed.sort((a, b) => a.startMs - b.startMs);
  // chunks starting at the same millisecond: one cue
  const merged: { startMs: number; endMs: number | undefined; text: string }[] = [];
  for (const t of timed) {
    const end = t.endMs;
    const last = merged.at(-1);
    if (last !== undefined && last.startMs === t.startMs) {
      last.text += `\n${t.text}`;
      last.endMs = last.endMs === undefined ? end : end === undefined ? last.endMs : Math.max(last.endMs, end);
    } else {
      merged.push({ startMs: t.startMs, endMs: end, text: t.text });
    }
  }
  return merged.map((c, i) => {
    const next = merged[i + 1]?.startMs;
    let endMs = c.endMs ?? next ?? c.startMs + DEFAULT_CUE_MS;
    if (next !== undefined && endMs > next) endMs = next;
    return { startMs: c.startMs, endMs, text: c.text };
  });
}

/** `HH:MM:SS,mmm` (SRT, `sep` ',') or `HH:MM:SS.mmm` (WebVTT, '.'); hours grow past 99 if needed. */
export function formatTimestamp(ms: number, sep: ',' | '.'): string {
  const whole = Math.max(0, Math.round(ms));
  const h = Math.floor(whole / 3_600_000);
  const m = Math.floor((whole % 3_600_000) / 60_000);
  const s = Math.floor((whole % 60_000) / 1000);
  const milli = whole % 1000;
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(h)}:${two(m)}:${two(s)}${sep}${String(milli).padStart(3, '0')}`;
}

/** SRT cue text: no timing arrow (`-->`, `--->`, ... become `->`). */
export function srtText(text: string): string {
  return text.replace(/-{2,}>/g, '->');
}

/** WebVTT cue text: `&`, `<` and `>` as character references (so no tag, entity or `-->` is read). */
export function vttText(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** A SubRip file: numbered cues from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`, text, a blank line. */
export function formatSrt(cues: readonly Cue[]): string {
  let out = '';
  cues.forEach((c, i) => {
    out += `${i + 1}\n${formatTimestamp(c.startMs, ',')} --> ${formatTimestamp(c.endMs, ',')}\n${srtText(c.text)}\n\n`;
  });
  return out;
}

/** A language tag as a WebVTT header may carry it: letters, digits and `-` only. */
const HEADER_LANG_RE = /^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$/;

/**
 * A WebVTT file: the `WEBVTT` line, a blank line, then (when `lang` is a plain language tag) a
 * comment block `NOTE` / `Language: xx` (the platform's own files put `Language: xx` right under
 * `WEBVTT`, which the current specification no longer allows and validators flag; a NOTE is
 * valid everywhere and players ignore it; the file's language is also in its name), and the
 * cues: `HH:MM:SS.mmm --> HH:MM:SS.mmm`, escaped text, a blank line.
 */
export function formatVtt(cues: readonly Cue[], lang?: string): string {
  let out = 'WEBVTT\n\n';
  if (lang !== undefined && HEADER_LANG_RE.test(lang)) out += `NOTE\nLanguage: ${lang}\n\n`;
  for (const c of cues) {
    out += `${formatTimestamp(c.startMs, '.')} --> ${formatTimestamp(c.endMs, '.')}\n${vttText(c.text)}\n\n`;
  }
  return out;
}

/** The file's text in `format`. */
export function formatSubtitles(format: SubtitleFormat, cues: readonly Cue[], lang?: string): string {
  return format === 'srt' ? formatSrt(cues) : formatVtt(cues, lang);
}
