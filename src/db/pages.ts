/**
 * Web pages: rows from delivered pages, their versions, which source found them, and their events,
 * written in the caller's transaction (the one that lands their raw copy). A page whose content
 * hash did not change gets only its last-seen time; one that changed gets a version, is queued for
 * the search indexer (its passages) and gets `page.changed`; a page no source finds any more is
 * marked gone (`page.gone`) and kept.
 */
import { z } from 'zod';
import { firstIssue } from '../api/issues.ts';
import type { QuarantineReason } from '../domain/items.ts';
import { isStorableText } from './storable.ts';
import type { EventType } from '../domain/events.ts';
import { pageSha256 } from '../domain/pages.ts';
import { queuePassages } from './passages.ts';
import type { Queryable } from './connection.ts';
import { recordEvents, type NewEvent } from './events.ts';

/** A delivered page as the interface describes it (unknown fields are kept raw, not here). */
export const DeliveredPageSchema = z
  .object({
    url: z.string().min(1),
    content: z.string(),
    name: z.string().nullish(),
    description: z.string().nullish(),
    ogUrl: z.string().nullish(),
    countCharacters: z.number().finite().nullish(),
  })
  .passthrough();

/** The columns of one `pages` row. */
export interface PageRow {
  url: string;
  name: string | null;
  description: string | null;
  ogUrl: string | null;
  content: string;
  countCharacters: number | null;
  sha256: string;
}

/** A page's row from its delivered form, or the reason it cannot be one (kept raw, quarantined, with it). */
export function pageRowFromApi(raw: unknown): { row: PageRow } | { reason: string; reasonCode: QuarantineReason } {
  const parsed = DeliveredPageSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      reason: `page does not match the interface at ${firstIssue(parsed.error)}`,
      reasonCode: 'schema',
    };
  }
  const p = parsed.data;
  // a page Postgres cannot hold as delivered (U+0000, a lone surrogate) is kept raw, not stored
  for (const [field, value] of Object.entries({
    url: p.url,
    content: p.content,
    name: p.name,
    description: p.description,
    ogUrl: p.ogUrl,
  })) {
    if (typeof value === 'string' && !isStorableText(value)) {
      return { reason: `page.${field}: holds a character Postgres text cannot store`, reasonCode: 'unstorable' };
    }
  }
  const count = p.countCharacters;
  return {
    row: {
      url: p.url,
      name: p.name ?? null,
      description: p.description ?? null,
      ogUrl: p.ogUrl ?? null,
      content: p.content,
      countCharacters: count === null || count === undefined ? null : Math.round(count),
      sha256: pageSha256(p.content),
    },
  };
}

export interface PageWriteCounts {
  added: number;
  changed: number;
  returned: number;
  unchanged: number;
}

/** Where the pages came from: their job and source. */
export interface PageOrigin {
  jobId: string;
  sourceId: number | null;
}

/**
 * Store `rows` (one per URL: a later duplicate in the list wins) with their versions, sections,
 * source membership and events; a new or changed page is queued for the search indexer to cut
 * its passages. Returns what changed.
 */
export async function storePages(
  tx: Queryable,
  origin: PageOrigin,
  given: readonly PageRow[],
): Promise<PageWriteCounts> {
  const rows = [...new Map(given.map((r) => [r.url, r])).values()];
  const counts: PageWriteCounts = { added: 0, changed: 0, returned: 0, unchanged: 0 };
  if (rows.length === 0) return counts;
  const urls = rows.map((r) => r.url);
  const before = new Map(
    (
      await tx<{ url: string; sha256: string; gone: boolean }[]>`
        select url, content_sha256 as sha256, gone_at is not null as gone
        from pages where url = any(${urls}::text[]) for update`
    ).map((r) => [r.url, r]),
  );
  const events: NewEvent[] = [];
  const rewritten: PageRow[] = [];
  for (const r of rows) {
    const old = before.get(r.url);
    const base = { url: r.url, sourceId: origin.sourceId, jobId: origin.jobId, sha256: r.sha256 };
    const event = (type: EventType, data: Record<string, unknown>) =>
      events.push({ type, data, sourceId: origin.sourceId, videoId: null });
    if (old === undefined) {
      counts.added++;
      event('page.added', base);
      rewritten.push(r);
      continue;
    }
    if (old.gone) {
      counts.returned++;
      event('page.returned', base);
    }
    if (old.sha256 !== r.sha256) {
      counts.changed++;
      event('page.changed', { ...base, previousSha256: old.sha256 });
      rewritten.push(r);
    } else if (!old.gone) counts.unchanged++;
  }
  await upsertPageRows(tx, origin, rows);
  await writeVersionsAndQueue(tx, origin, rewritten);
  await tx`
    insert into source_pages (source_id, url)
    select ${origin.sourceId}::int, u from unnest(${urls}::text[]) as u
    where ${origin.sourceId}::int is not null
    on conflict (source_id, url) do update set last_seen_at = now(), gone_at = null`;
  await recordEvents(tx, events);
  return counts;
}

async function upsertPageRows(tx: Queryable, origin: PageOrigin, rows: readonly PageRow[]): Promise<void> {
  await tx`
    insert into pages as p (url, name, description, og_url, content, count_characters, content_sha256, job_id, source_id)
    select u, n, d, o, c, cc, h, ${origin.jobId}::text, ${origin.sourceId}::int
    from unnest(${rows.map((r) => r.url)}::text[], ${rows.map((r) => r.name)}::text[],
      ${rows.map((r) => r.description)}::text[], ${rows.map((r) => r.ogUrl)}::text[],
      ${rows.map((r) => r.content)}::text[], ${rows.map((r) => r.countCharacters)}::bigint[],
      ${rows.map((r) => r.sha256)}::text[]) as x(u, n, d, o, c, cc, h)
    on conflict (url) do update set
      name = excluded.name, description = excluded.description, og_url = excluded.og_url,
      content = excluded.content, count_characters = excluded.count_characters,
      content_sha256 = excluded.content_sha256, job_id = excluded.job_id,
      source_id = coalesce(excluded.source_id, p.source_id), last_seen_at = now(), gone_at = null,
      updated_at = case
        when (p.name, p.description, p.og_url, p.content_sha256, p.count_characters)
          is distinct from (excluded.name, excluded.description, excluded.og_url, excluded.content_sha256, excluded.count_characters)
        then now() else p.updated_at end`;
}

/**
 * A new or changed page's version (kept once per content hash), and the page queued for the search
 * indexer: its passages are its search index (src/db/search.ts searchPages), cut after the
 * landing transaction (the tokenizer's work stays out of it). The version is stored without its
 * content, which is the page's current one (`pages.content`, read through the view
 * `page_versions`): the triggers on `pages` (migrations/0033) gave the version it replaced its
 * content back, and took the copy of an earlier version that came back.
 */
async function writeVersionsAndQueue(tx: Queryable, origin: PageOrigin, rows: readonly PageRow[]): Promise<void> {
  if (rows.length === 0) return;
  const urls = rows.map((r) => r.url);
  await tx`
    insert into page_version_rows (url, content_sha256, name, description, og_url, count_characters, job_id)
    select url, content_sha256, name, description, og_url, count_characters, ${origin.jobId}::text
    from pages where url = any(${urls}::text[])
    on conflict (url, content_sha256) do nothing`;
  await queuePassages(tx, 'page', urls);
}

/**
 * After a completed crawl of `sourceId` that found `found`: the source's other pages are marked
 * gone there, and a page no source finds any more is marked gone (`page.gone`). Returns the URLs
 * that became gone.
 */
export async function markPagesGone(
  tx: Queryable,
  origin: PageOrigin & { sourceId: number },
  found: readonly string[],
): Promise<string[]> {
  const left = await tx<{ url: string }[]>`
    update source_pages set gone_at = now()
    where source_id = ${origin.sourceId} and gone_at is null and not (url = any(${found}::text[]))
    returning url`;
  return markGoneWhereNoSourceHas(
    tx,
    origin,
    left.map((r) => r.url),
  );
}

/** Pages `urls` marked gone for `origin.sourceId` (a scrape answered not-found); the URLs that became gone. */
export async function markPagesGoneFor(
  tx: Queryable,
  origin: PageOrigin & { sourceId: number },
  urls: readonly string[],
): Promise<string[]> {
  if (urls.length === 0) return [];
  await tx`
    update source_pages set gone_at = now()
    where source_id = ${origin.sourceId} and gone_at is null and url = any(${urls}::text[])`;
  return markGoneWhereNoSourceHas(tx, origin, urls);
}

async function markGoneWhereNoSourceHas(tx: Queryable, origin: PageOrigin, urls: readonly string[]): Promise<string[]> {
  if (urls.length === 0) return [];
  const gone = await tx<{ url: string }[]>`
    update pages p set gone_at = now()
    where p.url = any(${urls}::text[]) and p.gone_at is null
      and not exists (select 1 from source_pages sp where sp.url = p.url and sp.gone_at is null)
    returning p.url`;
  await recordEvents(
    tx,
    gone.map((g) => ({
      type: 'page.gone' as const,
      data: { url: g.url, sourceId: origin.sourceId, jobId: origin.jobId },
      sourceId: origin.sourceId,
      videoId: null,
    })),
  );
  return gone.map((g) => g.url);
}

/** The pages a source holds now (found by its latest crawl or scrape), URL order. */
export async function sourcePageUrls(sql: Queryable, sourceId: number): Promise<string[]> {
  const rows = await sql<{ url: string }[]>`
    select url from source_pages where source_id = ${sourceId} and gone_at is null order by url`;
  return rows.map((r) => r.url);
}

/** When each of `urls` was last delivered (by any source); absent: never. */
export async function pagesLastSeen(sql: Queryable, urls: readonly string[]): Promise<Map<string, Date>> {
  const rows = await sql<{ url: string; lastSeenAt: Date }[]>`
    select url, last_seen_at as "lastSeenAt" from pages where url = any(${urls}::text[])`;
  return new Map(rows.map((r) => [r.url, r.lastSeenAt]));
}

/** The pages registered for a `pages` source (`source_pages`), gone ones included, URL order. */
export async function registeredPageUrls(sql: Queryable, sourceId: number): Promise<string[]> {
  const rows = await sql<{ url: string }[]>`
    select url from source_pages where source_id = ${sourceId} order by url`;
  return rows.map((r) => r.url);
}

/** Remember the pages a `pages` source keeps (at registration): nothing stored yet. */
export async function rememberPages(sql: Queryable, sourceId: number, urls: readonly string[]): Promise<void> {
  await sql`
    insert into source_pages (source_id, url, last_seen_at)
    select ${sourceId}::int, u, '-infinity'::timestamptz from unnest(${urls}::text[]) as u
    on conflict do nothing`;
}

/** Pages a source holds now (stored, not gone there). */
export async function sourcePageCount(sql: Queryable, sourceId: number): Promise<number> {
  const [r] = await sql<{ n: number }[]>`
    select count(*)::int as n from source_pages
    where source_id = ${sourceId} and gone_at is null and last_seen_at > '-infinity'::timestamptz`;
  return r!.n;
}

export interface PageTotals {
  stored: number;
  gone: number;
  versions: number;
}

/** The shards of `page_counts` (migrations/0019: `pg_backend_pid() % 16`); readers sum them all. */
export const PAGE_COUNT_SHARDS = 16;

/**
 * Pages stored, of them gone, and their versions (for `status`, `/metrics` and the overview): the
 * counters the triggers of migrations/0019 keep, PAGE_COUNT_SHARDS rows at most.
 */
export async function pageTotals(sql: Queryable): Promise<PageTotals> {
  const [r] = await sql<PageTotals[]>`
    select coalesce(sum(stored), 0)::int as stored, coalesce(sum(gone), 0)::int as gone,
      coalesce(sum(versions), 0)::int as versions
    from page_counts`;
  return r!;
}
