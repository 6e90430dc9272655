/**
 * Translations (`--translate`): which stored transcripts of a source's videos are due one, the
 * `translations` rows that record each one bought (or refused by the source's minute budget), and
 * what `status` counts of them.
 *
 * A translation of a video into a language is bought once per content of the transcript it is
 * translated from, whichever sources ask: its `translations` row in a TRANSLATION_BOUGHT_STATES
 * state is the claim (`translations_bought_uq`), inserted before the request is sent.
 */
import {
  TRANSLATION_BOUGHT_STATES,
  TRANSLATION_SENDING_STALE_MS,
  TRANSLATION_STATES,
  type TranscriptOrigin,
  type TranslationState,
} from '../domain/sources.ts';
import type { Queryable } from './connection.ts';

const TRANSLATION: TranscriptOrigin = 'translation';
const REFUSED_BUDGET: TranslationState = 'refused-budget';
/** The predicate of `translations_bought_uq`, as ON CONFLICT must name it (a literal list, not a parameter). */
const BOUGHT_LIST = TRANSLATION_BOUGHT_STATES.map((s) => `'${s}'`).join(', ');

export interface TranslationCandidate {
  videoId: string;
  /** the target language */
  lang: string;
  /** the stored transcript it would be translated from */
  fromLang: string;
  fromSha256: string;
  /** the video's duration, seconds (what the estimate is made from) */
  durationS: number;
}

/**
 * The source's videos due a translation into `lang`, newest upload first (then by ID): a stored
 * transcript of another language that is not itself a translation (the one the video lists first
 * among its languages, else the first by language), the video's duration known, and
 * - no native `lang` transcript stored, and none listed as available by that transcript (a native
 *   one exists upstream: `--lang` buys it at the native price, never a translation of it);
 * - no translation into `lang` stored, unless `refresh` and the transcript it was translated from
 *   has changed since;
 * - no translation of this content into `lang` bought (or possibly bought) by any source.
 */
export async function translationCandidates(
  sql: Queryable,
  c: { sourceId: number; lang: string; refresh: boolean },
): Promise<TranslationCandidate[]> {
  const rows = await sql<
    { video_id: string; from_lang: string; from_sha256: string; duration_s: number; upload_date: Date | null }[]
  >`
    select * from (
      select distinct on (sv.video_id) sv.video_id, t.lang as from_lang, t.content_sha256 as from_sha256,
        v.duration_s, v.upload_date
      from source_videos sv
      join videos v on v.id = sv.video_id
      join transcripts t on t.video_id = sv.video_id and t.origin <> ${TRANSLATION} and t.lang <> ${c.lang}
      where sv.source_id = ${c.sourceId}
        and v.duration_s > 0
        and v.gone_at is null
        and not (${c.lang} = any(coalesce(t.available_langs, '{}'::text[])))
      order by sv.video_id, array_position(t.available_langs, t.lang) nulls last, t.lang
    ) d
    where not exists (
        select 1 from transcripts x
        where x.video_id = d.video_id and x.lang = ${c.lang}
          and (x.origin <> ${TRANSLATION} or not ${c.refresh} or x.translated_from_sha256 = d.from_sha256))
      and not exists (
        select 1 from translations tr
        where tr.video_id = d.video_id and tr.lang = ${c.lang} and tr.from_sha256 = d.from_sha256
          and tr.state = any(${[...TRANSLATION_BOUGHT_STATES]}::text[]))
    order by d.upload_date desc nulls last, d.video_id`;
  return rows.map((r) => ({
    videoId: r.video_id,
    lang: c.lang,
    fromLang: r.from_lang,
    fromSha256: r.from_sha256,
    durationS: r.duration_s,
  }));
}

/** Started minutes of every translation this source bought or may have bought, all time (its budget's use). */
export async function translatedMinutes(sql: Queryable, sourceId: number): Promise<number> {
  const [row] = await sql<{ minutes: number }[]>`
    select coalesce(sum(minutes), 0)::int as minutes from translations
    where source_id = ${sourceId} and state = any(${TRANSLATION_SPENDING_STATES}::text[])`;
  return row?.minutes ?? 0;
}

/** States whose minutes count against the budget: sent, maybe billed (refused for the video costs nothing). */
const TRANSLATION_SPENDING_STATES: TranslationState[] = ['sending', 'stored', 'unknown', 'released'];

export interface NewTranslation extends TranslationCandidate {
  sourceId: number;
  minutes: number;
  creditsEstimated: number;
}

/**
 * Claim one translation before its request: its row, `sending`. Null when a process claimed it
 * first (any source): it is not bought twice.
 */
export async function claimTranslation(sql: Queryable, t: NewTranslation): Promise<number | null> {
  const [row] = await sql<{ id: number }[]>`
    insert into translations (video_id, lang, from_lang, from_sha256, source_id, state, duration_s, minutes, credits_estimated)
    values (${t.videoId}, ${t.lang}, ${t.fromLang}, ${t.fromSha256}, ${t.sourceId}, 'sending', ${t.durationS},
      ${t.minutes}, ${t.creditsEstimated})
    on conflict (video_id, lang, from_sha256) where state in (${sql.unsafe(BOUGHT_LIST)}) do nothing
    returning id::float8 as id`;
  return row?.id ?? null;
}

/** The translation's outcome; a stored one also clears the budget refusals any source recorded for it. */
export async function markTranslation(
  sql: Queryable,
  id: number,
  state: Exclude<TranslationState, 'sending' | 'refused-budget' | 'released'>,
  detail: string | null = null,
): Promise<void> {
  const [row] = await sql<{ video_id: string; lang: string }[]>`
    update translations set state = ${state}, detail = ${detail}, updated_at = now() where id = ${id}
    returning video_id, lang`;
  if (state === 'stored' && row) {
    await sql`
      delete from translations where video_id = ${row.video_id} and lang = ${row.lang} and state = ${REFUSED_BUDGET}`;
  }
}

/** A claim that created nothing upstream (the account or the upstream refused): gone, so it is asked again. */
export async function dropTranslationClaim(sql: Queryable, id: number): Promise<void> {
  await sql`delete from translations where id = ${id} and state = 'sending'`;
}

/**
 * Record that the source's budget left these translations unbought. Returns those recorded for the
 * first time (their event is due); one already recorded only has its time and reason moved.
 */
export async function recordBudgetRefusals(
  sql: Queryable,
  sourceId: number,
  refused: readonly (TranslationCandidate & { minutes: number; creditsEstimated: number; detail: string })[],
): Promise<TranslationCandidate[]> {
  if (refused.length === 0) return [];
  const json = JSON.stringify(
    refused.map((r) => ({
      video_id: r.videoId,
      lang: r.lang,
      from_lang: r.fromLang,
      from_sha256: r.fromSha256,
      duration_s: r.durationS,
      minutes: r.minutes,
      credits_estimated: r.creditsEstimated,
      detail: r.detail,
    })),
  );
  const rows = await sql<{ video_id: string; lang: string; inserted: boolean }[]>`
    insert into translations as t (video_id, lang, from_lang, from_sha256, source_id, state, duration_s, minutes,
      credits_estimated, detail)
    select r.video_id, r.lang, r.from_lang, r.from_sha256, ${sourceId}, ${REFUSED_BUDGET}, r.duration_s, r.minutes,
      r.credits_estimated, r.detail
    from jsonb_to_recordset(${json}::text::jsonb) as r(video_id text, lang text, from_lang text, from_sha256 text,
      duration_s float8, minutes int, credits_estimated int, detail text)
    on conflict (source_id, video_id, lang) where state = 'refused-budget' do update set
      from_lang = excluded.from_lang, from_sha256 = excluded.from_sha256, duration_s = excluded.duration_s,
      minutes = excluded.minutes, credits_estimated = excluded.credits_estimated, detail = excluded.detail,
      updated_at = now()
    returning t.video_id, t.lang, (xmax = 0) as inserted`;
  const fresh = new Set(rows.filter((r) => r.inserted).map((r) => `${r.video_id}\u0000${r.lang}`));
  return refused.filter((r) => fresh.has(`${r.videoId}\u0000${r.lang}`));
}

/** A budget refusal no longer standing (the translation now fits, or is no longer due): removed. */
export async function clearBudgetRefusals(
  sql: Queryable,
  sourceId: number,
  keep: readonly { videoId: string; lang: string }[],
): Promise<void> {
  await sql`
    delete from translations t
    where t.source_id = ${sourceId} and t.state = ${REFUSED_BUDGET}
      and (t.video_id, t.lang) not in (
        select * from unnest(${keep.map((k) => k.videoId)}::text[], ${keep.map((k) => k.lang)}::text[]))`;
}

/** What `status` shows of a source's translations. */
export interface TranslationCounts {
  /** translated transcripts stored of the source's videos */
  stored: number;
  /** translations this source's budget left unbought (recorded at its latest sync) */
  refused: number;
  /** translations whose answer was lost, or that failed for their video */
  unknown: number;
  failed: number;
}

export async function translationCounts(sql: Queryable, sourceId: number): Promise<TranslationCounts> {
  const [row] = await sql<TranslationCounts[]>`
    select
      (select count(*)::int from transcripts t join source_videos sv on sv.video_id = t.video_id
        where sv.source_id = ${sourceId} and t.origin = ${TRANSLATION}) as stored,
      (select count(*)::int from translations where source_id = ${sourceId} and state = ${REFUSED_BUDGET}) as refused,
      (select count(*)::int from translations where source_id = ${sourceId}
        and (state = 'unknown' or (state = 'sending' and ${staleSending(sql)}))) as unknown,
      (select count(*)::int from translations where source_id = ${sourceId} and state = 'failed') as failed`;
  return row ?? { stored: 0, refused: 0, unknown: 0, failed: 0 };
}

/** The budget refusals of a source, newest first (what `status` lists). */
export async function budgetRefusals(
  sql: Queryable,
  sourceId: number,
  limit: number,
): Promise<{ videoId: string; lang: string; minutes: number; detail: string | null; at: Date }[]> {
  return sql<{ videoId: string; lang: string; minutes: number; detail: string | null; at: Date }[]>`
    select video_id as "videoId", lang, minutes, detail, updated_at as at from translations
    where source_id = ${sourceId} and state = ${REFUSED_BUDGET}
    order by updated_at desc, id desc limit ${limit}`;
}

/** A `sending` row older than TRANSLATION_SENDING_STALE_MS: its process died mid-request (shown as `unknown`). */
function staleSending(sql: Queryable) {
  return sql`updated_at < now() - ${TRANSLATION_SENDING_STALE_MS} * interval '1 millisecond'`;
}

/** Every translation by the state it is shown in (a stale `sending` as `unknown`), zeros included. */
export async function translationTotals(sql: Queryable): Promise<Record<TranslationState, number>> {
  const rows = await sql<{ state: TranslationState; n: number }[]>`
    select case when state = 'sending' and ${staleSending(sql)} then 'unknown' else state end as state,
      count(*)::float8 as n
    from translations group by 1`;
  const totals = Object.fromEntries(TRANSLATION_STATES.map((s) => [s, 0])) as Record<TranslationState, number>;
  for (const r of rows) totals[r.state] += r.n;
  return totals;
}

/** A translation whose answer was lost, or whose process died while sending: maybe billed, not bought again until released. */
export interface LostTranslation {
  id: number;
  sourceId: number | null;
  videoId: string;
  lang: string;
  state: 'unknown' | 'sending';
  creditsEstimated: number;
  detail: string | null;
  at: Date;
}

/** Every translation `unknown`, or `sending` for longer than TRANSLATION_SENDING_STALE_MS, oldest first. */
export async function lostTranslations(sql: Queryable): Promise<LostTranslation[]> {
  return sql<LostTranslation[]>`
    select id::float8 as id, source_id as "sourceId", video_id as "videoId", lang, state,
      credits_estimated as "creditsEstimated", detail, updated_at as at
    from translations
    where state = 'unknown' or (state = 'sending' and ${staleSending(sql)})
    order by updated_at, id`;
}

/**
 * A person agreed to pay again for these translations: each is `released` (kept: it may have been
 * billed, and its minutes still count against its source's budget), which frees its video and
 * language for one new purchase. Only a row still lost is released (not one stored meanwhile).
 * Returns how many were.
 */
export async function releaseTranslations(sql: Queryable, ids: readonly number[], note: string): Promise<number> {
  const rows = await sql`
    update translations set state = 'released', detail = concat_ws(' | ', detail, ${note}::text), updated_at = now()
    where id = any(${ids}::bigint[]) and (state = 'unknown' or (state = 'sending' and ${staleSending(sql)}))
    returning id`;
  return rows.length;
}

/** A source's `--translate` settings (the columns of `sources` this file reads). */
export interface TranslateSettings {
  sourceId: number;
  translateLangs: string[];
  maxTranslateMinutes: number | null;
}

/** The `--translate` settings of those of `sourceIds` that have any, by ID. */
export async function translateSettings(sql: Queryable, sourceIds: readonly number[]): Promise<TranslateSettings[]> {
  if (sourceIds.length === 0) return [];
  return sql<TranslateSettings[]>`
    select id as "sourceId", translate_langs as "translateLangs", max_translate_minutes as "maxTranslateMinutes"
    from sources
    where id = any(${sourceIds}::int[]) and (cardinality(translate_langs) > 0 or max_translate_minutes is not null)
    order by id`;
}
