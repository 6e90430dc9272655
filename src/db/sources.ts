/**
 * The `sources` table: registering, listing and changing the sources to sync, and what the
 * pipeline reads and records about them.
 */
import { getTableColumns } from 'drizzle-orm';
import type { SourceKind } from '../domain/sources.ts';
import type postgres from 'postgres';
import type { Queryable } from './connection.ts';
import { sources, type NewSource, type Source } from './schema.ts';

export class SourceExistsError extends Error {
  readonly existingId: number;
  constructor(kind: string, externalId: string, existingId: number) {
    super(`${kind} ${externalId} is already registered as source ${existingId}`);
    this.name = 'SourceExistsError';
    this.existingId = existingId;
  }
}

export class SourceNotFoundError extends Error {
  readonly sourceId: number;
  constructor(sourceId: number) {
    super(`source ${sourceId} does not exist (see: sources list)`);
    this.name = 'SourceNotFoundError';
    this.sourceId = sourceId;
  }
}

/** Every column of `sources`, under the property names of its row type (`Source`). */
const SOURCE_COLUMNS = Object.entries(getTableColumns(sources))
  .map(([property, column]) => `s.${column.name} as "${property}"`)
  .join(', ');

/** What registering a source sets; every other column takes its default. */
export type SourceRegistration = Pick<NewSource, 'kind' | 'ref' | 'externalId' | 'maxVideos'> &
  Partial<
    Pick<
      NewSource,
      | 'langs'
      | 'textOnly'
      | 'cron'
      | 'paused'
      | 'title'
      | 'include'
      | 'search'
      | 'generateMissing'
      | 'maxGenerateMinutes'
      | 'maxCreditsPerDay'
      | 'refreshAfterMs'
      | 'mediaMode'
    >
  >;

export async function insertSource(sql: Queryable, row: SourceRegistration): Promise<Source> {
  const inserted = await sql<Source[]>`
    insert into sources as s (kind, ref, external_id, max_videos, langs, text_only, cron, paused, title, include,
                              search, generate_missing, max_generate_minutes, max_credits_per_day, refresh_after_ms,
                              media_mode)
    values (${row.kind}, ${row.ref}, ${row.externalId}, ${row.maxVideos}, ${row.langs ?? []}::text[],
            ${row.textOnly ?? false}, ${row.cron ?? null}::text, ${row.paused ?? false}, ${row.title ?? null}::text,
            ${row.include ?? []}::text[], ${(row.search ?? null) as postgres.JSONValue}::jsonb,
            ${row.generateMissing ?? false}, ${row.maxGenerateMinutes ?? null}::int, ${row.maxCreditsPerDay ?? null}::int,
            ${row.refreshAfterMs ?? null}::bigint, ${row.mediaMode ?? null}::text)
    on conflict (kind, external_id) do nothing
    returning ${sql.unsafe(SOURCE_COLUMNS)}`;
  if (inserted[0]) return inserted[0];
  const existing = await sql<{ id: number }[]>`
    select id from sources where kind = ${row.kind} and external_id = ${row.externalId}`;
  throw new SourceExistsError(row.kind, row.externalId, existing[0]?.id ?? -1);
}

export async function listSources(sql: Queryable): Promise<Source[]> {
  return sql<Source[]>`select ${sql.unsafe(SOURCE_COLUMNS)} from sources s order by s.id`;
}

export async function getSource(sql: Queryable, id: number): Promise<Source> {
  const rows = await sql<Source[]>`select ${sql.unsafe(SOURCE_COLUMNS)} from sources s where s.id = ${id}`;
  if (!rows[0]) throw new SourceNotFoundError(id);
  return rows[0];
}

export async function deleteSource(sql: Queryable, id: number): Promise<Source> {
  const rows = await sql<Source[]>`delete from sources s where s.id = ${id} returning ${sql.unsafe(SOURCE_COLUMNS)}`;
  if (!rows[0]) throw new SourceNotFoundError(id);
  return rows[0];
}

export async function setSourcePaused(sql: Queryable, id: number, paused: boolean): Promise<Source> {
  const rows = await sql<Source[]>`
    update sources s set paused = ${paused}, updated_at = now() where s.id = ${id}
    returning ${sql.unsafe(SOURCE_COLUMNS)}`;
  if (!rows[0]) throw new SourceNotFoundError(id);
  return rows[0];
}

/** A source's `--max-credits-per-day` (null: no cap). */
export async function setSourceMaxCreditsPerDay(
  sql: Queryable,
  id: number,
  maxCreditsPerDay: number | null,
): Promise<Source> {
  const rows = await sql<Source[]>`
    update sources s set max_credits_per_day = ${maxCreditsPerDay}::int, updated_at = now() where s.id = ${id}
    returning ${sql.unsafe(SOURCE_COLUMNS)}`;
  if (!rows[0]) throw new SourceNotFoundError(id);
  return rows[0];
}

/** What `sources edit` may change on a source's row; each takes effect at the source's next sync. */
export type SourceSettings = Pick<
  Source,
  | 'cron'
  | 'maxVideos'
  | 'langs'
  | 'textOnly'
  | 'include'
  | 'maxCreditsPerDay'
  | 'refreshAfterMs'
  | 'translateLangs'
  | 'maxTranslateMinutes'
  | 'mediaMode'
  | 'maxGenerateMinutes'
>;

/**
 * Set the given settings of source `id` (undefined: kept) in one statement, and return them as
 * they were just before and as they are now. One UPDATE, so a sync reading the row sees all of
 * the edit or none of it, and only the columns given are written: an edit of another setting
 * committed meanwhile is kept, not overwritten. The row locked by the subquery is the latest
 * committed version (READ COMMITTED re-reads it after waiting), so `before` is what this edit
 * replaced.
 */
export async function updateSourceSettings(
  sql: Queryable,
  id: number,
  set: Partial<SourceSettings>,
): Promise<{ before: SourceSettings; after: SourceSettings }> {
  const given = (k: keyof SourceSettings): boolean => set[k] !== undefined;
  const rows = await sql<{ before: SourceSettings; after: SourceSettings }[]>`
    update sources s set
      cron = case when ${given('cron')} then ${set.cron ?? null}::text else s.cron end,
      max_videos = case when ${given('maxVideos')} then ${set.maxVideos ?? null}::int else s.max_videos end,
      langs = case when ${given('langs')} then ${set.langs ?? null}::text[] else s.langs end,
      text_only = case when ${given('textOnly')} then ${set.textOnly ?? null}::boolean else s.text_only end,
      include = case when ${given('include')} then ${set.include ?? null}::text[] else s.include end,
      max_credits_per_day = case when ${given('maxCreditsPerDay')} then ${set.maxCreditsPerDay ?? null}::int else s.max_credits_per_day end,
      refresh_after_ms = case when ${given('refreshAfterMs')} then ${set.refreshAfterMs ?? null}::bigint else s.refresh_after_ms end,
      translate_langs = case when ${given('translateLangs')} then ${set.translateLangs ?? null}::text[] else s.translate_langs end,
      max_translate_minutes = case when ${given('maxTranslateMinutes')} then ${set.maxTranslateMinutes ?? null}::int else s.max_translate_minutes end,
      media_mode = case when ${given('mediaMode')} then ${set.mediaMode ?? null}::text else s.media_mode end,
      max_generate_minutes = case when ${given('maxGenerateMinutes')} then ${set.maxGenerateMinutes ?? null}::int else s.max_generate_minutes end,
      updated_at = now()
    from (select * from sources where id = ${id} for update) o
    where s.id = o.id
    returning
      json_build_object('cron', o.cron, 'maxVideos', o.max_videos, 'langs', o.langs, 'textOnly', o.text_only,
        'include', o.include, 'maxCreditsPerDay', o.max_credits_per_day, 'refreshAfterMs', o.refresh_after_ms,
        'translateLangs', o.translate_langs, 'maxTranslateMinutes', o.max_translate_minutes,
        'mediaMode', o.media_mode, 'maxGenerateMinutes', o.max_generate_minutes) as before,
      json_build_object('cron', s.cron, 'maxVideos', s.max_videos, 'langs', s.langs, 'textOnly', s.text_only,
        'include', s.include, 'maxCreditsPerDay', s.max_credits_per_day, 'refreshAfterMs', s.refresh_after_ms,
        'translateLangs', s.translate_langs, 'maxTranslateMinutes', s.max_translate_minutes,
        'mediaMode', s.media_mode, 'maxGenerateMinutes', s.max_generate_minutes) as after`;
  if (!rows[0]) throw new SourceNotFoundError(id);
  return rows[0];
}

/** A source a reference may name, as `sources edit|pause|resume|remove` list candidates. */
export interface SourceMatch {
  id: number;
  kind: SourceKind;
  externalId: string;
  ref: string;
  title: string | null;
}

/** What a reference can be compared with, parsed from it beforehand (src/pipeline/commands/source-ref.ts). */
export interface SourceRefKeys {
  /** the reference read as a source ID, if it is a whole number */
  id: number | null;
  /** compared with `ref` (as given when added) and `external_id` */
  text: string;
  /** canonical IDs the reference names (a playlist or channel URL's ID), compared with `external_id` */
  externalIds: string[];
  /** a channel handle without its `@`, compared case-insensitively with the channel's record */
  handle: string | null;
}

/**
 * The sources a reference names: the source with that ID when there is one (an ID always wins, so
 * every source can be named unambiguously), else every source whose ref or external ID is the
 * reference, or whose channel record has the handle. Postgres only: no API call, no credit.
 */
export async function sourcesMatching(sql: Queryable, keys: SourceRefKeys): Promise<SourceMatch[]> {
  if (keys.id !== null) {
    const byId = await sql<SourceMatch[]>`
      select id, kind, external_id as "externalId", ref, title from sources where id = ${keys.id}`;
    if (byId.length > 0) return byId;
  }
  // a channel record is keyed by the channel ID, which only a channel source has as its external
  // ID (a playlist ID never has the channel ID's form; searches and video lists carry a prefix)
  return sql<SourceMatch[]>`
    select s.id, s.kind, s.external_id as "externalId", s.ref, s.title
    from sources s
    left join channels c on c.id = s.external_id
    where s.ref = ${keys.text}
      or s.external_id = any(${[keys.text, ...keys.externalIds]}::text[])
      or (${keys.handle}::text is not null and lower(ltrim(c.handle, '@')) = lower(${keys.handle}::text))
    order by s.id`;
}

/** Every source's ID, in order. */
export async function allSourceIds(sql: Queryable): Promise<number[]> {
  const rows = await sql<Pick<Source, 'id'>[]>`select id from sources order by id`;
  return rows.map((r) => r.id);
}

/** Which of `ids` are registered. */
export async function existingSourceIds(sql: Queryable, ids: readonly number[]): Promise<Set<number>> {
  const rows = await sql<Pick<Source, 'id'>[]>`select id from sources where id = any(${[...ids]}::int[])`;
  return new Set(rows.map((r) => r.id));
}

/** The cron patterns that need a job scheduler: each one some source not paused runs on. */
export async function activeCrons(sql: Queryable): Promise<string[]> {
  const rows = await sql<
    { cron: string }[]
  >`select distinct cron from sources where cron is not null and not paused order by cron`;
  return rows.map((r) => r.cron);
}

/** The sources a tick of `cron` syncs: those on exactly that pattern and not paused, in ID order. */
export async function sourceIdsOnCron(sql: Queryable, cron: string): Promise<number[]> {
  const rows = await sql<Pick<Source, 'id'>[]>`select id from sources where cron = ${cron} and not paused order by id`;
  return rows.map((r) => r.id);
}
