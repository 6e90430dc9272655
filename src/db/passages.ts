/**
 * Passages (issue #31, migrations/0024): cut by the search indexer from `search_index_queue`
 * in one short transaction per batch of keys, and read by transcript search (src/db/search.ts)
 * and `export --passages`. A re-cut keeps the row (the identity, `id`) of every passage whose
 * text and first chunk are unchanged, and only deletes and inserts the others.
 */
import type postgres from 'postgres';
import {
  cutPassages,
  cutTextPassages,
  transcriptChunks,
  type Passage,
  type PassageKind,
  type PassageOptions,
} from '../domain/passages.ts';
import { pageSections } from '../domain/pages.ts';
import type { Queryable } from './connection.ts';

export interface IndexRun {
  /** transcripts taken off the queue */
  transcripts: number;
  /** media items taken off the queue */
  media: number;
  /** pages taken off the queue */
  pages: number;
  /** passages written anew (unchanged ones are kept, not counted) */
  passagesCut: number;
  /** passages removed (changed or gone) */
  passagesRemoved: number;
}

/** The passages of a stored transcript: its chunks, or its text when it has none. */
export function transcriptPassages(t: { chunks: unknown; text: string }, o: PassageOptions): Passage[] {
  const chunks = transcriptChunks(t.chunks);
  return chunks.length > 0 ? cutPassages(chunks, o) : cutTextPassages(t.text, o);
}

/** The kinds of document this build's indexer takes off the queue (a newer build's other keys stay for it). */
const QUEUED_KINDS = ['transcript', 'media', 'page'] as const satisfies readonly PassageKind[];

/**
 * Queue media items whose transcript changed, or pages whose content did, for the indexer to cut
 * their passages again (a transcript is queued by its table's trigger).
 */
export async function queuePassages(tx: Queryable, kind: 'media' | 'page', docs: readonly string[]): Promise<void> {
  if (docs.length === 0) return;
  await tx`
    insert into search_index_queue (kind, video_id, lang)
    select ${kind}::text, u, '' from unnest(${[...docs]}::text[]) as u
    on conflict do nothing`;
}

/**
 * Up to `max` queued documents, oldest first (SKIP LOCKED: indexers of several processes share
 * the queue, never a key), taken off the queue in one transaction that re-cuts the passages of
 * each document, which are also the search index (each written with its tsvector). A key whose
 * document is gone only leaves the queue (its passages went with it). A
 * landing transaction that stores a taken key again waits for this one, then queues it anew.
 */
export async function indexQueuedTranscripts(sql: Queryable, max: number, o: PassageOptions): Promise<IndexRun> {
  const run = async (tx: postgres.TransactionSql | postgres.Sql): Promise<IndexRun> => {
    const taken = await tx<{ kind: (typeof QUEUED_KINDS)[number]; video_id: string; lang: string }[]>`
      delete from search_index_queue q
      where (q.kind, q.video_id, q.lang) in (
        select p.kind, p.video_id, p.lang from search_index_queue p
        where p.kind = any(${[...QUEUED_KINDS]}::text[])
        order by p.queued_at limit ${Math.max(max, 1)}::int for update skip locked)
      returning q.kind, q.video_id, q.lang`;
    const keys = taken.filter((k) => k.kind === 'transcript');
    const mediaUrls = taken.filter((k) => k.kind === 'media').map((k) => k.video_id);
    const pageUrls = taken.filter((k) => k.kind === 'page').map((k) => k.video_id);
    const none = { inserted: 0, removed: 0 };
    const t = keys.length > 0 ? await cutTranscripts(tx, keys, o) : none;
    const m = mediaUrls.length > 0 ? await cutMediaPassages(tx, mediaUrls, o) : none;
    const p = pageUrls.length > 0 ? await cutPagePassages(tx, pageUrls, o) : none;
    return {
      transcripts: keys.length,
      media: mediaUrls.length,
      pages: pageUrls.length,
      passagesCut: t.inserted + m.inserted + p.inserted,
      passagesRemoved: t.removed + m.removed + p.removed,
    };
  };
  if ('begin' in sql) return (sql as postgres.Sql).begin((tx) => run(tx)) as Promise<IndexRun>;
  return run(sql as postgres.TransactionSql);
}

/** The passages of transcripts taken off the queue. */
async function cutTranscripts(
  tx: Queryable,
  keys: readonly { video_id: string; lang: string }[],
  o: PassageOptions,
): Promise<{ inserted: number; removed: number }> {
  const ids = keys.map((k) => k.video_id);
  const langs = keys.map((k) => k.lang);
  const docs = await tx<{ video_id: string; lang: string; chunks: unknown; text: string }[]>`
    select t.video_id, t.lang, t.chunks, t.text
    from transcripts t join unnest(${ids}::text[], ${langs}::text[]) as k(video_id, lang)
      on k.video_id = t.video_id and k.lang = t.lang`;
  const cut = docs.map((d) => ({ doc: d.video_id, lang: d.lang, passages: transcriptPassages(d, o) }));
  return replacePassages(
    tx,
    'transcript',
    keys.map((k) => ({ doc: k.video_id, lang: k.lang })),
    cut,
  );
}

/**
 * The passages of media items taken off the queue, from their transcripts as stored (timed
 * chunks, or plain text), in the language stored with each ('' when none is). A language
 * that changed replaces the passages of the old one.
 */
async function cutMediaPassages(
  tx: Queryable,
  urls: readonly string[],
  o: PassageOptions,
): Promise<{ inserted: number; removed: number }> {
  const docs = await tx<{ url: string; lang: string; content: unknown; text: string | null }[]>`
    select m.url, coalesce(m.transcript_lang, '') as lang, m.transcript_content as content, m.transcript_text as text
    from media m where m.url = any(${[...urls]}::text[])`;
  const stored = await tx<{ doc: string; lang: string }[]>`
    select distinct p.doc, p.lang from passages p where p.kind = 'media' and p.doc = any(${[...urls]}::text[])`;
  const cut = docs.map((d) => ({
    doc: d.url,
    lang: d.lang,
    passages: transcriptPassages({ chunks: d.content, text: d.text ?? '' }, o),
  }));
  const keys = new Map([...stored, ...cut].map((k) => [JSON.stringify([k.doc, k.lang]), { doc: k.doc, lang: k.lang }]));
  return replacePassages(tx, 'media', [...keys.values()], cut);
}

/**
 * The passages of pages taken off the queue, from their content as stored now, each within one
 * of its sections (the sections `page_sections` holds, cut the same way).
 */
async function cutPagePassages(
  tx: Queryable,
  urls: readonly string[],
  o: PassageOptions,
): Promise<{ inserted: number; removed: number }> {
  const docs = await tx<{ url: string; content: string }[]>`
    select p.url, p.content from pages p where p.url = any(${[...urls]}::text[])`;
  return replacePassages(
    tx,
    'page',
    urls.map((u) => ({ doc: u, lang: '' })),
    docs.map((d) => ({ doc: d.url, lang: '', passages: pagePassages(pageSections(d.content), o) })),
  );
}

/** A passage as cut for a document, with a page section's headings and anchor. */
type CutPassage = Passage & { headings?: string[]; anchor?: string | null };

/**
 * The passages of `keys` (documents of `kind`) replaced by `cut` (the documents that still
 * exist), keeping the row, and so the id, of every passage whose text and place (first chunk,
 * or a page's anchor) are unchanged; only the others are deleted and inserted.
 */
export async function replacePassages(
  tx: Queryable,
  kind: PassageKind,
  keys: readonly { doc: string; lang: string }[],
  cut: readonly { doc: string; lang: string; passages: readonly CutPassage[] }[],
): Promise<{ inserted: number; removed: number }> {
  const place = (firstChunk: number | null, anchor: string | null | undefined) => `${firstChunk ?? ''}#${anchor ?? ''}`;
  const old = await tx<{ id: number; doc: string; lang: string; n: number; sha256: string; place: string }[]>`
    select p.id::float8 as id, p.doc, p.lang, p.n, p.sha256,
      coalesce(p.first_chunk::text, '') || '#' || coalesce(p.anchor, '') as place
    from passages p join unnest(${keys.map((k) => k.doc)}::text[], ${keys.map((k) => k.lang)}::text[]) as k(doc, lang)
      on p.kind = ${kind}::text and p.doc = k.doc and p.lang = k.lang`;
  // the old passages of each document, by what identifies an unchanged one
  const kept = new Map<string, { id: number; n: number }[]>();
  for (const p of old) {
    const key = JSON.stringify([p.doc, p.lang, p.sha256, p.place]);
    const list = kept.get(key) ?? [];
    list.push({ id: p.id, n: p.n });
    kept.set(key, list);
  }
  const keptIds = new Set<number>();
  const renumber: { id: number; n: number }[] = [];
  const fresh: (CutPassage & { doc: string; lang: string })[] = [];
  for (const d of cut) {
    for (const p of d.passages) {
      const same = kept.get(JSON.stringify([d.doc, d.lang, p.sha256, place(p.firstChunk, p.anchor)]))?.shift();
      if (same !== undefined) {
        keptIds.add(same.id);
        if (same.n !== p.n) renumber.push({ id: same.id, n: p.n });
      } else fresh.push({ ...p, doc: d.doc, lang: d.lang });
    }
  }
  const gone = old.filter((p) => !keptIds.has(p.id)).map((p) => p.id);
  if (gone.length > 0) await tx`delete from passages where id = any(${gone}::bigint[])`;
  if (renumber.length > 0) {
    await tx`
      update passages p set n = r.n
      from unnest(${renumber.map((r) => r.id)}::bigint[], ${renumber.map((r) => r.n)}::int[]) as r(id, n)
      where p.id = r.id`;
  }
  if (fresh.length > 0) {
    // as JSON: a page passage's headings are an array per row
    const rows = fresh.map((f) => ({
      doc: f.doc,
      lang: f.lang,
      n: f.n,
      text: f.text,
      tokens: f.tokens,
      sha256: f.sha256,
      start_s: f.startS,
      end_s: f.endS,
      first_chunk: f.firstChunk,
      last_chunk: f.lastChunk,
      headings: f.headings ?? null,
      anchor: f.anchor ?? null,
    }));
    await tx`
      insert into passages (kind, doc, lang, n, text, tokens, sha256, start_s, end_s, first_chunk, last_chunk, headings, anchor)
      select ${kind}::text, r.doc, r.lang, r.n, r.text, r.tokens, r.sha256, r.start_s, r.end_s, r.first_chunk, r.last_chunk,
        case when r.headings is null then null else array(select jsonb_array_elements_text(r.headings)) end, r.anchor
      from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) as r(
        doc text, lang text, n int, text text, tokens int, sha256 text, start_s float8, end_s float8,
        first_chunk int, last_chunk int, headings jsonb, anchor text)`;
  }
  return { inserted: fresh.length, removed: gone.length };
}

/** The passages of a page: each section cut alone, keeping its headings and anchor, numbered through the page. */
export function pagePassages(
  sections: readonly { headings: string[]; anchor: string | null; text: string }[],
  o: PassageOptions,
): CutPassage[] {
  const out: CutPassage[] = [];
  for (const s of sections) {
    for (const p of cutTextPassages(s.text, o))
      out.push({ ...p, n: out.length, headings: s.headings, anchor: s.anchor });
  }
  return out;
}

/**
 * How many passages are stored: the sum of `passage_counts`' shards, which triggers on `passages`
 * keep (migration 0031), not a count of the table's rows (linear in the corpus: `status` read
 * every passage for it).
 */
export async function passageCount(sql: Queryable): Promise<number> {
  const [r] = await sql<{ n: number }[]>`select coalesce(sum(passages), 0)::float8 as n from passage_counts`;
  return r!.n;
}

export interface PassageExportRow {
  id: number;
  kind: string;
  doc: string;
  lang: string;
  n: number;
  text: string;
  tokens: number;
  sha256: string;
  start_s: number | null;
  end_s: number | null;
  headings: string[] | null;
  anchor: string | null;
}

/**
 * The passages `export --passages` writes, in id order: of one kind and language when given,
 * and only those cut after passage `afterId` (a cursor's position; a re-cut passage is a new row,
 * so it comes again).
 */
export function exportPassageRecords(
  tx: Queryable,
  s: { kinds?: readonly string[] | undefined; lang?: string | undefined; afterId?: number | undefined },
) {
  const kinds = s.kinds !== undefined ? tx`and p.kind = any(${[...s.kinds]}::text[])` : tx``;
  const lang = s.lang !== undefined ? tx`and p.lang = ${s.lang}::text` : tx``;
  const after = s.afterId !== undefined ? tx`and p.id > ${s.afterId}::bigint` : tx``;
  return tx<PassageExportRow[]>`
    select p.id::float8 as id, p.kind, p.doc, p.lang, p.n, p.text, p.tokens, p.sha256, p.start_s, p.end_s, p.headings, p.anchor
    from passages p
    where true ${kinds} ${lang} ${after}
    order by p.id`;
}

/**
 * Where `export --passages` stands in the snapshot: the highest passage id or removal `seq` (one
 * sequence numbers both; 0 before the first passage).
 */
export async function lastPassageId(tx: Queryable): Promise<number> {
  const [r] = await tx<{ id: number }[]>`
    select greatest(
      (select coalesce(max(id), 0) from passages),
      (select coalesce(max(seq), 0) from passage_removals))::float8 as id`;
  return r!.id;
}

export interface PassageRemovalRow {
  id: number;
  kind: string;
  doc: string;
  lang: string;
}

/**
 * The passages removed after cursor position `afterId` up to `upTo` that a consumer may hold:
 * those cut at or before `afterId` (written by an earlier run); one cut and removed since was
 * never written. Of one kind and language when given, in the order they went.
 */
export function exportPassageRemovals(
  tx: Queryable,
  s: { kinds?: readonly string[] | undefined; lang?: string | undefined; afterId: number; upTo: number },
) {
  const kinds = s.kinds !== undefined ? tx`and r.kind = any(${[...s.kinds]}::text[])` : tx``;
  const lang = s.lang !== undefined ? tx`and r.lang = ${s.lang}::text` : tx``;
  return tx<PassageRemovalRow[]>`
    select r.id::float8 as id, r.kind, r.doc, r.lang
    from passage_removals r
    where r.seq > ${s.afterId}::bigint and r.seq <= ${s.upTo}::bigint and r.id <= ${s.afterId}::bigint ${kinds} ${lang}
    order by r.seq`;
}
