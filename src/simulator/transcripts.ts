/**
 * Shaping a transcript as a request asks: which language, chunks merged up to `chunkSize`
 * characters, or all text joined into one string.
 */
import type { TranscriptChunk, TranscriptContent } from '../api/schemas.ts';

/** The requested language when available, else the first available one (endpoint 7's rule). */
export function chooseLang(available: readonly string[], requested: string | undefined): string | undefined {
  if (requested !== undefined && available.includes(requested)) return requested;
  return available[0];
}

/**
 * Merge consecutive chunks while the merged text (joined by one space) stays within `chunkSize`
 * characters. A chunk already longer than `chunkSize` is kept whole: captions are not split.
 */
export function mergeChunks(chunks: readonly TranscriptChunk[], chunkSize: number): TranscriptChunk[] {
  const out: TranscriptChunk[] = [];
  let cur: TranscriptChunk | undefined;
  for (const c of chunks) {
    if (cur !== undefined && cur.text.length + 1 + c.text.length <= chunkSize) {
      cur.text = `${cur.text} ${c.text}`;
      cur.duration = c.offset + c.duration - cur.offset;
      continue;
    }
    if (cur !== undefined) out.push(cur);
    cur = { ...c };
  }
  if (cur !== undefined) out.push(cur);
  return out;
}

/** `text=true`: the chunk texts joined by a single space. */
export function joinText(chunks: readonly TranscriptChunk[]): string {
  return chunks.map((c) => c.text).join(' ');
}

export function shapeContent(
  chunks: readonly TranscriptChunk[],
  opts: { text?: boolean | undefined; chunkSize?: number | undefined },
): TranscriptContent {
  if (opts.text === true) return joinText(chunks);
  return opts.chunkSize === undefined ? [...chunks] : mergeChunks(chunks, opts.chunkSize);
}
