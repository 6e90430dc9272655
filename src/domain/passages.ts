/**
 * Passages (issue #31): every transcript cut into token-aware windows that fit an embedding
 * model, each keeping its moment (the start of its first chunk, the end of its last) and a
 * content hash. Pure: the indexer (src/db/passages.ts) reads the transcripts, cuts them here and
 * stores what changed. Tokens are counted with cl100k_base (gpt-tokenizer), the encoding of the
 * common embedding models; a passage never splits a word.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as Cl100k from 'gpt-tokenizer/encoding/cl100k_base';
import { mediaMomentUrl } from './media.ts';
import { fillVideoUrl } from './search.ts';

/**
 * The encoding, loaded at the first count: its tables take a few hundred ms of CPU to load, which
 * every command that imports this module (`status`, for the passage count) would pay otherwise.
 */
let encoding: typeof Cl100k | undefined;
function countTokens(text: string): number {
  encoding ??= createRequire(import.meta.url)('gpt-tokenizer/encoding/cl100k_base') as typeof Cl100k;
  return encoding.countTokens(text);
}

/** A transcript chunk as the cutter reads it: its text and its moment in seconds (null: unknown). */
export interface PassageChunk {
  text: string;
  startS: number | null;
  endS: number | null;
}

export interface PassageOptions {
  /** most tokens a passage holds (a single word longer than this is kept whole, alone) */
  size: number;
  /** tokens a passage repeats from the end of the one before (whole chunks or words), at most */
  overlap: number;
}

export interface Passage {
  /** position in the document, from 0 */
  n: number;
  text: string;
  tokens: number;
  /** sha256 of `text`, hex */
  sha256: string;
  /** seconds: the start of its first chunk, the end of its last; null without timings */
  startS: number | null;
  endS: number | null;
  /** the chunks it holds (0-based, inclusive); null for text without chunks */
  firstChunk: number | null;
  lastChunk: number | null;
}

/** A piece of a chunk: the whole chunk, or, for a chunk longer than a passage, a run of its words. */
interface Piece {
  text: string;
  tokens: number;
  chunk: number;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Tokens of `text` in cl100k_base. */
export function tokenCount(text: string): number {
  return countTokens(text);
}

/** The problem with `o`, or null: size at least 1, overlap smaller than size. */
export function passageOptionsProblem(o: PassageOptions): string | null {
  if (!Number.isInteger(o.size) || o.size < 1)
    return `PASSAGE_TOKENS: ${o.size} is not usable: expected a whole number >= 1`;
  if (!Number.isInteger(o.overlap) || o.overlap < 0 || o.overlap >= o.size) {
    return `PASSAGE_OVERLAP_TOKENS: ${o.overlap} is not usable: expected a whole number from 0 to PASSAGE_TOKENS - 1 (${o.size - 1})`;
  }
  return null;
}

/** The words of a chunk too long for one passage, packed into pieces of at most `size` tokens. */
function splitAtWords(text: string, chunk: number, size: number): Piece[] {
  const pieces: Piece[] = [];
  let words: string[] = [];
  let tokens = 0;
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    const t = countTokens(` ${word}`);
    if (words.length > 0 && tokens + t > size) {
      pieces.push({ text: words.join(' '), tokens, chunk });
      words = [];
      tokens = 0;
    }
    words.push(word);
    tokens += t;
  }
  if (words.length > 0) pieces.push({ text: words.join(' '), tokens, chunk });
  return pieces;
}

/**
 * The chunks as pieces of at most `size` tokens each (a chunk that fits stays whole): `size` is
 * the passage size less the overlap, so a piece always fits after what a passage repeats.
 */
function piecesOf(chunks: readonly PassageChunk[], size: number): Piece[] {
  const pieces: Piece[] = [];
  chunks.forEach((c, i) => {
    const text = c.text.trim();
    if (text === '') return;
    // a piece is joined after a space: count it so (cl100k's pre-tokenizer splits before " word")
    const tokens = countTokens(` ${text}`);
    if (tokens <= size) pieces.push({ text, tokens, chunk: i });
    else pieces.push(...splitAtWords(text, i, size));
  });
  return pieces;
}

/**
 * The passages of a transcript's chunks: whole chunks packed up to `size` tokens (a chunk bigger
 * than `size - overlap` is split at word boundaries, each part keeping the chunk's moment), each passage
 * after the first starting with what it repeats of the one before, at most `overlap` tokens: its
 * last pieces that fit, or, when its last piece alone does not, that piece's last words that do.
 * Search needs the end of one passage at the start of the next: a phrase across two chunks is
 * then whole in one passage whatever the chunks' sizes. Joined with single spaces.
 */
export function cutPassages(chunks: readonly PassageChunk[], o: PassageOptions): Passage[] {
  const pieces = piecesOf(chunks, o.size - o.overlap);
  const passages: Passage[] = [];
  // the first piece no passage holds yet, and what the next one repeats of the one before
  let next = 0;
  let lead: Piece[] = [];
  while (next < pieces.length) {
    // what it repeats gives way to new text: every passage holds some
    let tokens = lead.reduce((sum, p) => sum + p.tokens, 0);
    while (lead.length > 0 && tokens + pieces[next]!.tokens > o.size) tokens -= lead.shift()!.tokens;
    let end = next;
    tokens += pieces[next]!.tokens;
    while (end + 1 < pieces.length && tokens + pieces[end + 1]!.tokens <= o.size) tokens += pieces[++end]!.tokens;
    let held = [...lead, ...pieces.slice(next, end + 1)];
    let text = joinPieces(held);
    let exact = countTokens(text);
    // the sum of the pieces' counts is the passage's, except at rare merges across a space
    while (exact > o.size && held.length > 1) {
      if (end > next) end--;
      else lead.shift();
      held = [...lead, ...pieces.slice(next, end + 1)];
      text = joinPieces(held);
      exact = countTokens(text);
    }
    const first = held[0]!;
    const last = held.at(-1)!;
    passages.push({
      n: passages.length,
      text,
      tokens: exact,
      sha256: sha256Hex(text),
      startS: chunks[first.chunk]!.startS,
      endS: chunks[last.chunk]!.endS,
      firstChunk: first.chunk,
      lastChunk: last.chunk,
    });
    next = end + 1;
    lead = repeatedEnd(held, o.overlap);
  }
  return passages;
}

/**
 * What the passage after `held` repeats: its last pieces that fit in `overlap` tokens (never its
 * first, so the cut moves on), else the last words of its last piece that do.
 */
function repeatedEnd(held: readonly Piece[], overlap: number): Piece[] {
  let from = held.length;
  let tokens = 0;
  while (from - 1 > 0 && tokens + held[from - 1]!.tokens <= overlap) tokens += held[--from]!.tokens;
  if (from < held.length) return held.slice(from);
  const last = held.at(-1)!;
  let tail: Piece | undefined;
  // word starts, from the last one back, while the words from there fit
  const starts = [...last.text.matchAll(/\s+/g)].map((m) => m.index + m[0].length).reverse();
  for (const at of starts) {
    const text = last.text.slice(at);
    const t = countTokens(` ${text}`);
    if (t > overlap) break;
    tail = { text, tokens: t, chunk: last.chunk };
  }
  return tail === undefined ? [] : [tail];
}

function joinPieces(pieces: readonly Piece[]): string {
  return pieces.map((p) => p.text).join(' ');
}

/** The passages of text without chunks (a plain-text transcript, a page section): no moments, no chunk range. */
export function cutTextPassages(text: string, o: PassageOptions): Passage[] {
  return cutPassages([{ text, startS: null, endS: null }], o).map((p) => ({ ...p, firstChunk: null, lastChunk: null }));
}

/**
 * A transcript's chunks as stored (`transcripts.chunks`, the API's offset and duration in ms) as
 * the cutter reads them; entries that are not objects are skipped, a missing offset is no moment.
 */
export function transcriptChunks(chunks: unknown): PassageChunk[] {
  if (!Array.isArray(chunks)) return [];
  const out: PassageChunk[] = [];
  for (const c of chunks as unknown[]) {
    if (c === null || typeof c !== 'object' || Array.isArray(c)) continue;
    const r = c as Record<string, unknown>;
    const offset = typeof r.offset === 'number' ? r.offset : null;
    const duration = typeof r.duration === 'number' ? r.duration : null;
    out.push({
      text: typeof r.text === 'string' ? r.text : '',
      startS: offset === null ? null : offset / 1000,
      endS: offset === null || duration === null ? null : (offset + duration) / 1000,
    });
  }
  return out;
}

/** The kinds of document passages are cut from; `export --kind video` means `transcript`. */
export const PASSAGE_KINDS = ['transcript', 'page', 'media'] as const;
export type PassageKind = (typeof PASSAGE_KINDS)[number];

/**
 * A passage's link: a transcript's video at the passage's start second (VIDEO_URL_TEMPLATE, the
 * same link as a search hit's; null when the template is not set), a page's URL at its section's
 * anchor, a media item's URL (at its start second where the URL takes one: `mediaMomentUrl`).
 */
export function passageUrl(
  p: { kind: string; doc: string; startS: number | null; anchor: string | null },
  videoUrlTemplate: string | undefined,
): string | null {
  if (p.kind === 'transcript')
    return videoUrlTemplate === undefined ? null : fillVideoUrl(videoUrlTemplate, p.doc, p.startS);
  if (p.kind === 'page' && p.anchor !== null) return `${p.doc}#${p.anchor}`;
  if (p.kind === 'media') return mediaMomentUrl(p.doc, p.startS);
  return p.doc;
}
