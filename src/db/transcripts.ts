/**
 * The `transcripts` table: one row per video and returned language, upserted in bulk (same
 * JSON-parameter technique as videos.ts). `content_sha256` identifies what was delivered, so an
 * unchanged transcript is never rewritten and keeps its `updated_at`. `origin` says whether the
 * video's captions, a generation from its audio or a translation of another of its transcripts
 * delivered it.
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
  /**
   * the chunk array as delivered (`[]` when empty), or where the landed raw item holds it
   * (`LandedChunks`); null when the content was a string
   */
  chunks: unknown[] | LandedChunks | null;
  availableLangs: string[] | null;
  /** hex sha256 of canonicalJson({ content, lang, availableLangs }) */
  contentSha256: string;
  /** true when the content arrived as a string */
  textOnly: boolean;
  /** the batch that delivered this version */
  lastJobId: string | null;
  /** captions (a transcript batch), generated (a transcript job) or translation (`--translate`) */
  origin: TranscriptOrigin;
  /** a translation: the language and content hash of the transcript it was translated from */
  translatedFrom?: { lang: string; sha256: string } | undefined;
}

/**
 * The chunks are the array at `path` in the raw item's jsonb `payload` (the `batch_items` row of
 * the row's `lastJobId` and `videoId`): Postgres copies them from there instead of being sent
 * them again. The poller writes a transcript in the transaction that lands its item, so the
 * chunks (most of a ~20 KB item) are parsed and sent once, and no parsed copy of them has to be
 * kept until the chunk of items is written.
 */
export interface LandedChunks {
  path: readonly string[];
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

/** Every object key anywhere in `value`. */
function collectKeys(value: unknown, into: Set<string>): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const v of value) collectKeys(v, into);
    return;
  }
  for (const k of Object.keys(value)) {
    into.add(k);
    collectKeys((value as Record<string, unknown>)[k], into);
  }
}

/** A key an object lists first, in numeric order, whatever the order it was set in (an array index). */
const INDEX_KEY_RE = /^(?:0|[1-9]\d*)$/;
const isIndexKey = (k: string) => INDEX_KEY_RE.test(k) && Number(k) < 2 ** 32 - 1;

/**
 * JSON with object keys sorted at every level, so equal values hash equally whatever the key
 * order they arrived in. Arrays keep their order (chunk order is content).
 *
 * The order is the one `sortKeys` (a replacer function) has always produced, which the stored
 * `content_sha256` values depend on: keys sorted, except that index-like keys ("0", "12") come
 * first in numeric order (an object lists them so whatever order they are set in). It is
 * produced here by JSON.stringify with the sorted list of every key as its replacer array, which
 * stays in native code: ~40% less time than the replacer function on the benchmark's 150-chunk
 * transcripts. A value with a `__proto__` key takes the replacer function (the array form would
 * read every object's prototype under that name).
 */
export function canonicalJson(value: unknown): string {
  const keys = new Set<string>();
  collectKeys(value, keys);
  if (keys.has('__proto__')) return JSON.stringify(value, sortKeys) ?? 'null';
  const all = [...keys];
  const order = [
    ...all.filter(isIndexKey).sort((a, b) => Number(a) - Number(b)),
    ...all.filter((k) => !isIndexKey(k)).sort(),
  ];
  return JSON.stringify(value, order) ?? 'null';
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
  /** where the landed item holds the content, to let Postgres copy the chunks from there */
  landedContent?: LandedChunks,
  /** a translation: the transcript it was translated from */
  translatedFrom?: { lang: string; sha256: string },
): TranscriptRow {
  const canonical = canonicalTranscript(transcript);
  // The canonical JSON escapes U+0000 and lone surrogates as \u0000 / \udXXX: only when one
  // of those appears is the (slower) walk needed to tell whether and where a value is bad.
  // (`includes` first: ~1.5 us instead of the regex's ~8 us on a 20 KB transcript, most have no \u)
  if ((canonical.includes('\\u') && ESCAPED_UNSTORABLE_RE.test(canonical)) || !isStorableText(videoId)) {
    assertStorable(
      { videoId, content: transcript.content, lang: transcript.lang, availableLangs: transcript.availableLangs },
      'transcript',
    );
  }
  const content = transcript.content;
  const textOnly = typeof content === 'string';
  return {
    videoId,
    lang: transcript.lang,
    text: textOnly ? content : content.map((c) => c.text).join(' '),
    chunks: textOnly ? null : (landedContent ?? content),
    availableLangs: transcript.availableLangs ?? null,
    contentSha256: sha256Hex(canonical),
    textOnly,
    lastJobId: jobId,
    origin,
    ...(translatedFrom !== undefined ? { translatedFrom } : {}),
  };
}

/**
 * Inserts or updates `rows`. Rows with the same (videoId, lang): the last one wins. An existing
 * row is rewritten (and its `updated_at` set) only when its content hash, available languages or
 * origin differ, and never from chunks to plain text: a `--text` source sharing videos with a
 * source that wants chunks must not downgrade what is stored. Captions replace a generated
 * transcript (they are what the video's makers wrote); a generated one never replaces captions.
 *
 * Chunks given as `LandedChunks` are copied by Postgres from the row's raw item, which must be in
 * `batch_items` (landed with a jsonb payload) when this runs: the poller lands a chunk of items
 * and then upserts their rows in the same transaction; the sink upserts rows of landed items.
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
    {
      video_id: string;
      lang: string;
      content_sha256: string;
      available_langs: string[] | null;
      has_chunks: boolean;
      origin: TranscriptOrigin;
      translated_from_sha256: string | null;
    }[]
  >`
    select t.video_id, t.lang, t.content_sha256, t.available_langs, t.chunks is not null as has_chunks, t.origin,
      t.translated_from_sha256
    from transcripts t
    join unnest(${unique.map((r) => r.videoId)}::text[], ${unique.map((r) => r.lang)}::text[]) as k(video_id, lang)
      using (video_id, lang)`;
  const storedByKey = new Map(stored.map((s) => [`${s.video_id}\u0000${s.lang}`, s]));
  const changed = unique.filter((r) => {
    const s = storedByKey.get(`${r.videoId}\u0000${r.lang}`);
    if (s === undefined) return true;
    // a plain-text delivery (a `--text` source) never replaces stored chunks
    if (s.has_chunks && r.chunks === null) return false;
    if (!replaces(s.origin, r.origin)) return false;
    return (
      s.content_sha256 !== r.contentSha256 ||
      !sameStrings(s.available_langs, r.availableLangs) ||
      s.origin !== r.origin ||
      (s.translated_from_sha256 ?? null) !== (r.translatedFrom?.sha256 ?? null)
    );
  });
  await touchVersions(
    sql,
    unique.filter((r) => storedByKey.get(`${r.videoId}\u0000${r.lang}`)?.content_sha256 === r.contentSha256),
  );
  if (changed.length === 0) return { inserted: 0, updated: 0, unchanged: unique.length };
  const json = JSON.stringify(
    changed.map((r) => {
      const c = r.chunks;
      const landed = c !== null && !Array.isArray(c) ? c : undefined;
      return {
        video_id: r.videoId,
        lang: r.lang,
        text: r.text,
        chunks: landed ? null : c,
        chunks_path: landed ? landed.path : null,
        available_langs: r.availableLangs,
        content_sha256: r.contentSha256,
        text_only: r.textOnly,
        last_job_id: r.lastJobId,
        origin: r.origin,
        translated_from: r.translatedFrom?.lang ?? null,
        translated_from_sha256: r.translatedFrom?.sha256 ?? null,
      };
    }),
  );
  const result = await sql<{ inserted: boolean }[]>`
    insert into transcripts as t (
      video_id, lang, text, chunks, available_langs, content_sha256, text_only, last_job_id, origin,
      translated_from, translated_from_sha256)
    select r.video_id, r.lang, r.text,
      case when r.chunks_path is null then r.chunks else i.payload #> r.chunks_path end,
      r.available_langs, r.content_sha256, r.text_only, r.last_job_id, r.origin,
      r.translated_from, r.translated_from_sha256
    from jsonb_to_recordset(${json}::text::jsonb) as r(
      video_id text, lang text, text text, chunks jsonb, chunks_path text[], available_langs text[],
      content_sha256 text, text_only boolean, last_job_id text, origin text,
      translated_from text, translated_from_sha256 text)
    left join batch_items i on r.chunks_path is not null and i.job_id = r.last_job_id and i.video_id = r.video_id
    on conflict (video_id, lang) do update set
      text = excluded.text,
      chunks = excluded.chunks,
      available_langs = excluded.available_langs,
      content_sha256 = excluded.content_sha256,
      text_only = excluded.text_only,
      last_job_id = excluded.last_job_id,
      origin = excluded.origin,
      translated_from = excluded.translated_from,
      translated_from_sha256 = excluded.translated_from_sha256,
      updated_at = now()
    where (t.content_sha256, t.available_langs, t.origin, t.translated_from_sha256)
        is distinct from (excluded.content_sha256, excluded.available_langs, excluded.origin, excluded.translated_from_sha256)
      and not (t.chunks is not null and excluded.chunks is null)
      and not (t.origin = ${CAPTIONS} and excluded.origin = ${GENERATED})
      -- a translation never replaces a transcript of the video's own (captions or generated)
      and not (t.origin <> ${TRANSLATION} and excluded.origin = ${TRANSLATION})
      -- an older delivery (a replay of an old batch, a slow poll) never overwrites a newer one,
      -- nor makes a change event back to the old content
      and not exists (
        select 1 from batches stored_by join batches delivering on delivering.job_id = excluded.last_job_id
        where stored_by.job_id = t.last_job_id and delivering.submitted_at < stored_by.submitted_at)
    returning (xmax = 0) as inserted`;
  const inserted = result.filter((r) => r.inserted).length;
  const updated = result.length - inserted;
  return { inserted, updated, unchanged: unique.length - result.length };
}

/**
 * Identical content delivered again: its version's `last_seen_at` (and batch) move, nothing else
 * (no row rewritten, no event). A version missing (stored before migration 0010) stays missing
 * until the content changes.
 */
async function touchVersions(sql: Queryable, rows: readonly TranscriptRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    update transcript_version_rows v set last_seen_at = now(), last_job_id = r.job_id
    from unnest(${rows.map((r) => r.videoId)}::text[], ${rows.map((r) => r.lang)}::text[],
      ${rows.map((r) => r.contentSha256)}::text[], ${rows.map((r) => r.lastJobId)}::text[]) as r(video_id, lang, sha, job_id)
    where v.video_id = r.video_id and v.lang = r.lang and v.content_sha256 = r.sha`;
}

const CAPTIONS: TranscriptOrigin = 'captions';
const GENERATED: TranscriptOrigin = 'generated';
const TRANSLATION: TranscriptOrigin = 'translation';

/**
 * Whether a delivery of origin `incoming` may replace a stored transcript of origin `stored`:
 * captions replace a generated transcript (they are what the video's makers wrote), never the
 * reverse; a transcript of the video's own (captions or generated) replaces a translation (the
 * words said, not a rendering of other words), and a translation never replaces one of those.
 */
function replaces(stored: TranscriptOrigin, incoming: TranscriptOrigin): boolean {
  if (stored === CAPTIONS && incoming === GENERATED) return false;
  if (stored !== TRANSLATION && incoming === TRANSLATION) return false;
  return true;
}

function sameStrings(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
