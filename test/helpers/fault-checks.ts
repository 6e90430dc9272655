/**
 * What a fault scenario judges at the end, read straight from the scenario's Postgres: the
 * rows a user would count, and every item of every batch accounted for.
 */
import type { Simulator } from '../../src/simulator/server.ts';
import type { FaultRig } from './fault-rig.ts';
import { waitUntil } from './proc.ts';

export interface Settled {
  /** rows in `videos` / `transcripts` */
  videos: number;
  transcripts: number;
  /** batches recorded, by status */
  batches: number;
  statuses: Record<string, number>;
  /** items recorded, and those not in a final state (processing, landed) */
  items: number;
  unsettledItems: number;
  itemStates: Record<string, number>;
  /** a video in two batches of the same kind and language (paid twice) */
  duplicateItems: number;
}

export async function ledger(rig: FaultRig): Promise<Settled> {
  const { sql } = rig.db();
  const [v] = await sql<{ n: number }[]>`select count(*)::int as n from videos`;
  const [t] = await sql<{ n: number }[]>`select count(*)::int as n from transcripts`;
  const statuses: Record<string, number> = {};
  let batches = 0;
  for (const r of await sql<
    { status: string; n: number }[]
  >`select status, count(*)::int as n from batches group by status`) {
    statuses[r.status] = r.n;
    batches += r.n;
  }
  const itemStates: Record<string, number> = {};
  let items = 0;
  for (const r of await sql<
    { state: string; n: number }[]
  >`select state, count(*)::int as n from batch_items group by state`) {
    itemStates[r.state] = r.n;
    items += r.n;
  }
  const [dup] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select i.video_id from batch_items i join batches b using (job_id)
      where b.replay_of is null
      group by i.video_id, b.kind, coalesce(b.lang, '') having count(*) > 1) d`;
  return {
    videos: v!.n,
    transcripts: t!.n,
    batches,
    statuses,
    items,
    unsettledItems: (itemStates.processing ?? 0) + (itemStates.landed ?? 0),
    itemStates,
    duplicateItems: dup!.n,
  };
}

/** Wait until every batch is terminal and nothing is left landed-but-not-sunk; then the ledger. */
export async function settle(rig: FaultRig, _sourceIds: number[], timeoutMs: number): Promise<Settled> {
  const { sql } = rig.db();
  await waitUntil(
    async () => {
      const [r] = await sql<{ open: number; landed: number; total: number }[]>`
      select
        (select count(*)::int from batches where status in ('submitted', 'queued', 'active')) as open,
        (select count(*)::int from batch_items where state in ('landed', 'processing')) as landed,
        (select count(*)::int from batches) as total`;
      return r!.total > 0 && r!.open === 0 && r!.landed === 0 ? true : undefined;
    },
    timeoutMs,
    'every batch to finish and every landed item to be stored',
    250,
  );
  return ledger(rig);
}

/** Transcript rows a channel should end with: its public videos that have any transcript. */
export function expectedTranscripts(sim: Simulator, channelId: string): number {
  return sim.catalog
    .videoIds(channelId)!
    .map((id) => sim.catalog.videoInfo(id)!)
    .filter((i) => i.fate === 'public' && i.transcriptLanguages.length > 0).length;
}

/** Stored rows that differ from the raw item they were sunk from (or have none). */
export interface RowsVsRaw {
  /** sunk items compared (latest sunk copy of each video, per kind and returned language) */
  videoItems: number;
  transcriptItems: number;
  /** keys (`v:<id>`, `t:<id>:<lang>`) of rows missing or differing from their raw item */
  mismatched: string[];
  /** rows with no sunk raw item at all (written from nothing) */
  orphans: string[];
}

/**
 * Compare every `videos` and `transcripts` row with the raw item (`batch_items.payload`) it was
 * sunk from, field by field, in Postgres: values as delivered (text byte-exact, null stays null;
 * dates and numbers compared as the column's type). A transcript's `text` is its chunk texts
 * joined by one space (or the string content), `chunks` the delivered array.
 */
export async function rowsVsRaw(rig: FaultRig): Promise<RowsVsRaw> {
  const { sql } = rig.db();
  const arr = (j: string) =>
    `case when jsonb_typeof(${j}) = 'array' then array(select e from jsonb_array_elements_text(${j}) with ordinality as a(e, o) order by o) end`;
  const [counts] = await sql<{ v: number; t: number }[]>`
    select
      (select count(distinct i.video_id)::int from batch_items i join batches b using (job_id)
        where b.kind = 'video' and i.state = 'sunk') as v,
      (select count(distinct (i.video_id, i.payload->'transcript'->>'lang'))::int from batch_items i join batches b using (job_id)
        where b.kind = 'transcript' and i.state = 'sunk') as t`;
  // no parameters: plain SQL text, so the repeated array expression can be spliced in
  const videoMismatch = await sql.unsafe<{ k: string }[]>(`
    with raw as (
      select distinct on (i.video_id) i.video_id, i.payload->'video' as v
      from batch_items i join batches b using (job_id)
      where b.kind = 'video' and i.state = 'sunk'
      order by i.video_id, i.sunk_at desc, i.landed_at desc)
    select 'v:' || raw.video_id as k from raw left join videos x on x.id = raw.video_id
    where x.id is null or (
      x.title, x.description, x.duration_s, x.channel_id, x.channel_name, x.tags, x.thumbnail,
      x.upload_date, x.view_count, x.like_count, x.transcript_languages
    ) is distinct from (
      raw.v->>'title', raw.v->>'description', (raw.v->>'duration')::float8, raw.v->'channel'->>'id',
      raw.v->'channel'->>'name', ${arr("raw.v->'tags'")}, raw.v->>'thumbnail',
      (raw.v->>'uploadDate')::timestamptz, (raw.v->>'viewCount')::numeric, (raw.v->>'likeCount')::numeric,
      ${arr("raw.v->'transcriptLanguages'")})`);
  const transcriptMismatch = await sql.unsafe<{ k: string }[]>(`
    with raw as (
      select distinct on (i.video_id, i.payload->'transcript'->>'lang')
        i.video_id, i.payload->'transcript'->>'lang' as lang, i.payload->'transcript' as t
      from batch_items i join batches b using (job_id)
      where b.kind = 'transcript' and i.state = 'sunk'
      order by i.video_id, i.payload->'transcript'->>'lang', i.sunk_at desc, i.landed_at desc)
    select 't:' || raw.video_id || ':' || raw.lang as k
    from raw left join transcripts x on x.video_id = raw.video_id and x.lang = raw.lang
    where x.video_id is null or (x.text, x.chunks, x.available_langs) is distinct from (
      case jsonb_typeof(raw.t->'content')
        when 'string' then raw.t->>'content'
        else (select coalesce(string_agg(c->>'text', ' ' order by o), '')
              from jsonb_array_elements(raw.t->'content') with ordinality as e(c, o))
      end,
      case when jsonb_typeof(raw.t->'content') = 'array' then raw.t->'content' end,
      ${arr("raw.t->'availableLangs'")})`);
  const orphans = await sql<{ k: string }[]>`
    select 'v:' || x.id as k from videos x where not exists (
      select 1 from batch_items i join batches b using (job_id)
      where b.kind = 'video' and i.state = 'sunk' and i.video_id = x.id)
    union all
    select 't:' || x.video_id || ':' || x.lang from transcripts x where not exists (
      select 1 from batch_items i join batches b using (job_id)
      where b.kind = 'transcript' and i.state = 'sunk' and i.video_id = x.video_id
        and i.payload->'transcript'->>'lang' = x.lang)`;
  return {
    videoItems: counts!.v,
    transcriptItems: counts!.t,
    mismatched: [...videoMismatch, ...transcriptMismatch].map((r) => r.k),
    orphans: orphans.map((r) => r.k),
  };
}

/**
 * When each row and item was last written: `v:<id>` and `t:<id>:<lang>` → `updated_at`,
 * `i:<jobId>:<videoId>` → `sunk_at` of sunk items. A row or item written again moves its stamp
 * (the upserts set `updated_at` only when a value changes; an item is marked sunk once).
 */
export async function writeStamps(rig: FaultRig): Promise<Map<string, string>> {
  const { sql } = rig.db();
  const rows = await sql<{ k: string; at: string }[]>`
    select 'v:' || id as k, updated_at::text as at from videos
    union all
    select 't:' || video_id || ':' || lang, updated_at::text from transcripts
    union all
    select 'i:' || job_id || ':' || video_id, sunk_at::text from batch_items where state = 'sunk'`;
  return new Map(rows.map((r) => [r.k, r.at]));
}

/** Keys of `before` whose stamp is gone or different in `after`. */
export function movedStamps(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...before].filter(([k, at]) => after.get(k) !== at).map(([k]) => k);
}

/**
 * Rows written again after they were first inserted: `updated_at` later than `first_seen_at`
 * (both are the inserting transaction's time; only a later write that changed a value moves
 * `updated_at`). Meaningful where every row was delivered once, unchanged.
 */
export async function rewrittenRows(rig: FaultRig): Promise<string[]> {
  const { sql } = rig.db();
  const rows = await sql<{ k: string }[]>`
    select 'v:' || id as k from videos where updated_at <> first_seen_at
    union all
    select 't:' || video_id || ':' || lang from transcripts where updated_at <> first_seen_at`;
  return rows.map((r) => r.k);
}
