/**
 * The `transcripts` table: one row per video and returned language, upserted in bulk (same
 * JSON-parameter technique as videos.ts). `content_sha256` identifies what was delivered, so an
 * unchanged transcript is never rewritten and keeps its `updated_at`. `origin` says whether the
 * video's captions or a generation from its audio delivered it.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { TranscriptContentSchema, type Transcript } from '../api/schemas.ts';
import type { TranscriptOrigin } from '../domain/sources.ts';
import type { Queryable } from './connection.ts';
import { ESCAPED_UNSTORABLE_RE, assertStorable, isStorableText } from './storable.ts';
import { lastById, type UpsertCounts } from './videos.ts';

/** One `transcripts` row as the sink writes it. */
export interface TranscriptRow {
  videoId: string;
  /** the language the API returned */
  lang: string;
  /** chunk texts joined by a single space, or the string content as delivered */
  text: string;
  /** the chunk array as delivered (`[]` when empty); null when the content was a string */
  chunks: unknown[] | null;
  availableLangs: string[] | null;
  /** hex sha256 of canonicalJson({ content, lang, availableLangs }) */
  contentSha256: string;
  /** true when the content arrived as a string */
  textOnly: boolean;
  /** the batch that delivered this version */
  lastJobId: string | null;
  /** captions (a transcript batch) or generated (a transcript job) */
  origin: TranscriptOrigin;
}

/**
 * What a transcript row needs of a transcript job's answer: a `completed` JobResult, or a
 * Transcript answered at once (`availableLangs` is optional in a JobResult). Unknown fields are
 * allowed; the row is built from the answer as received, not from this parse.
 */
export const DeliveredTranscriptSchema = z.object({
  content: TranscriptContentSchema,
  lang: z.string(),
  availableLangs: z.array(z.string()).optional(),
});
/** A delivered transcript: a batch item's Transcript, or a transcript job's result. */
export type DeliveredTranscript = Pick<Transcript, 'content' | 'lang'> & { availableLangs?: string[] | undefined };

/** Plain objects get their keys in sorted order (a copy only when they are not sorted already). */
function sortKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const keys = Object.keys(value);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) sorted = keys[i - 1]! < keys[i]!;
  if (sorted) return value;
  const out: Record<string, unknown> = {};
  for (const k of keys.sort()) out[k] = (value as Record<string, unknown>)[k];
  return out;
}

/**
 * JSON with object keys sorted at every level, so equal values hash equally whatever the key
 * order they arrived in. Arrays keep their order (chunk order is content).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, sortKeys) ?? 'null';
}

/** hex sha256 of the canonical JSON of what identifies a transcript's content. */
export function transcriptSha256(transcript: DeliveredTranscript): string {
  return sha256Hex(canonicalTranscript(transcript));
}

function canonicalTranscript(transcript: DeliveredTranscript): string {
  return canonicalJson({
    content: transcript.content,
    lang: transcript.lang,
    availableLangs: transcript.availableLangs,
  });
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * Maps a delivered Transcript to its row. Pass the item's transcript as received (validated,
 * not stripped) so `chunks` keeps every field the API sent. Throws UnstorableValueError for a
 * string Postgres cannot hold (U+0000, a lone surrogate); the caller quarantines that item.
 */
export function transcriptRowFromApi(
  videoId: string,
  transcript: DeliveredTranscript,
  jobId: string,
  origin: TranscriptOrigin = 'captions',
): TranscriptRow {
  const canonical = canonicalTranscript(transcript);
  // The canonical JSON escapes U+0000 and lone surrogates as \u0000 / \udXXX: only when one
  // of those appears is the (slower) walk needed to tell whether and where a value is bad.
  if (ESCAPED_UNSTORABLE_RE.test(canonical) || !isStorableText(videoId)) {
    assertStorable({ videoId, content: transcript.content, lang: transcript.lang, availableLangs: transcript.availableLangs }, 'transcript');
  }
  const content = transcript.content;
  const textOnly = typeof content === 'string';
  return {
    videoId,
    lang: transcript.lang,
    text: textOnly ? content : content.map((c) => c.text).join(' '),
    chunks: textOnly ? null : content,
    availableLangs: transcript.availableLangs ?? null,
    contentSha256: sha256Hex(canonical),
    textOnly,
    lastJobId: jobId,
    origin,
  };
}

/**
 * Inserts or updates `rows`. Rows with the same (videoId, lang): the last one wins. An existing
 * row is rewritten (and its `updated_at` set) only when its content hash, available languages or
 * origin differ, and never from chunks to plain text: a `--text` source sharing videos with a
 * source that wants chunks must not downgrade what is stored. Captions replace a generated
 * transcript (they are what the video's makers wrote); a generated one never replaces captions.
 *
 * Two statements per chunk: a read of the stored hashes of these keys, then one upsert of only
 * the new or changed rows. Transcripts are large (~45 KB a row with chunks), so a re-run of
 * unchanged results (replay, a redelivered sink job) sends nothing but keys instead of every
 * payload; measured ~20x faster on unchanged 500-row chunks. The upsert keeps its own
 * changed-only guard, so a concurrent writer between the two statements cannot cause a
 * spurious rewrite.
 */
export async function upsertTranscripts(sql: Queryable, rows: readonly TranscriptRow[]): Promise<UpsertCounts> {
  const unique = lastById(rows, (r) => `${r.videoId}\u0000${r.lang}`);
  if (unique.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  const stored = await sql<
    { video_id: string; lang: string; content_sha256: string; available_langs: string[] | null; has_chunks: boolean; origin: TranscriptOrigin }[]
  >`
    select t.video_id, t.lang, t.content_sha256, t.available_langs, t.chunks is not null as has_chunks, t.origin
    from transcripts t
    join unnest(${unique.map((r) => r.videoId)}::text[], ${unique.map((r) => r.lang)}::text[]) as k(video_id, lang)
      using (video_id, lang)`;
  const storedByKey = new Map(stored.map((s) => [`${s.video_id}\u0000${s.lang}`, s]));
  const changed = unique.filter((r) => {
    const s = storedByKey.get(`${r.videoId}\u0000${r.lang}`);
    if (s === undefined) return true;
    // a plain-text delivery (a `--text` source) never replaces stored chunks
    if (s.has_chunks && r.chunks === null) return false;
    if (s.origin === CAPTIONS && r.origin === GENERATED) return false;
    return s.content_sha256 !== r.contentSha256 || !sameStrings(s.available_langs, r.availableLangs) || s.origin !== r.origin;
  });
  if (changed.length === 0) return { inserted: 0, updated: 0, unchanged: unique.length };
  const json = JSON.stringify(
    changed.map((r) => ({
      video_id: r.videoId,
      lang: r.lang,
      text: r.text,
      chunks: r.chunks,
      available_langs: r.availableLangs,
      content_sha256: r.contentSha256,
      text_only: r.textOnly,
      last_job_id: r.lastJobId,
      origin: r.origin,
    })),
  );
  const result = await sql<{ inserted: boolean }[]>`
    insert into transcripts as t (
      video_id, lang, text, chunks, available_langs, content_sha256, text_only, last_job_id, origin)
    select video_id, lang, text, chunks, available_langs, content_sha256, text_only, last_job_id, origin
    from jsonb_to_recordset(${json}::text::jsonb) as r(
      video_id text, lang text, text text, chunks jsonb, available_langs text[],
      content_sha256 text, text_only boolean, last_job_id text, origin text)
    on conflict (video_id, lang) do update set
      text = excluded.text,
      chunks = excluded.chunks,
      available_langs = excluded.available_langs,
      content_sha256 = excluded.content_sha256,
      text_only = excluded.text_only,
      last_job_id = excluded.last_job_id,
      origin = excluded.origin,
      updated_at = now()
    where (t.content_sha256, t.available_langs, t.origin)
        is distinct from (excluded.content_sha256, excluded.available_langs, excluded.origin)
      and not (t.chunks is not null and excluded.chunks is null)
      and not (t.origin = ${CAPTIONS} and excluded.origin = ${GENERATED})
    returning (xmax = 0) as inserted`;
  const inserted = result.filter((r) => r.inserted).length;
  const updated = result.length - inserted;
  return { inserted, updated, unchanged: unique.length - result.length };
}

const CAPTIONS: TranscriptOrigin = 'captions';
const GENERATED: TranscriptOrigin = 'generated';

function sameStrings(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
