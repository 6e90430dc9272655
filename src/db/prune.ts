/**
 * Retention's statements: raw payloads of settled items, old `sync_runs`, thinned
 * `credit_snapshots`, and the `prune_runs` record. Each pruning statement changes at most `limit`
 * rows and is its own transaction, so a running pipeline waits on none of them for long.
 *
 * Every "freed" figure is the stored size of what goes (`pg_column_size`: compressed, TOAST
 * included), the room autovacuum makes reusable; a dry run sums the same expression over the same
 * rows without changing them.
 */
import type postgres from 'postgres';
import { PRUNABLE_ITEM_STATES, type PruneTrigger, type PrunedTable } from '../domain/retention.ts';
import type { Queryable } from './connection.ts';

/** Rows and stored bytes one step affected (or, in a dry run, would). */
export interface Freed {
  rows: number;
  bytes: number;
}

/** Any client that can open a transaction (the pool, not a transaction). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Pool = postgres.Sql<any>;

/** The daily prune's claim ('PR'); the second key is always 0. Beside the namespaces of db/leases.ts. */
const PRUNE_LOCK_NAMESPACE = 0x5052;

/**
 * When an item settled: the expression `batch_items_prunable_idx` is built on, spelled exactly as
 * there; and the states of its predicate as literals (with a bound parameter the planner could
 * not prove that the partial index applies, and would scan the table).
 */
const SETTLED_AT = 'coalesce(sunk_at, landed_at, updated_at)';
const PRUNABLE_STATES = PRUNABLE_ITEM_STATES.map((s) => `'${s}'`).join(', ');
/** The stored size of an item's raw copy (jsonb or text), bytes. */
const PAYLOAD_SIZE = 'coalesce(pg_column_size(payload), 0) + coalesce(pg_column_size(payload_raw), 0)';

/** The constant SQL text above as a fragment of a statement of `sql` (never a value from outside). */
const frag = (sql: Queryable, text: string) => sql.unsafe(text);

export interface PruneCutoffs {
  /** items settled before this lose their raw payload; null: RAW_RETENTION_DAYS is 0 */
  rawBefore: Date | null;
  /** sync runs started before this are deleted; null: HISTORY_RETENTION_DAYS is 0 */
  historyBefore: Date | null;
  /** credit snapshots taken before this are thinned */
  snapshotsBefore: Date;
  /** change events that occurred before this are deleted, unless a webhook endpoint still needs them; null: EVENTS_RETENTION_DAYS is 0 */
  eventsBefore: Date | null;
}

/** The cutoffs of one run, on the database's clock (0 days: that table is kept). */
export async function pruneCutoffs(
  sql: Queryable,
  o: {
    rawRetentionDays: number;
    historyRetentionDays: number;
    snapshotThinAfterDays: number;
    eventsRetentionDays: number;
  },
): Promise<PruneCutoffs> {
  const [row] = await sql<PruneCutoffs[]>`
    select
      case when ${o.rawRetentionDays}::int > 0 then now() - make_interval(days => ${o.rawRetentionDays}::int) end as "rawBefore",
      case when ${o.historyRetentionDays}::int > 0 then now() - make_interval(days => ${o.historyRetentionDays}::int) end as "historyBefore",
      now() - make_interval(days => ${o.snapshotThinAfterDays}::int) as "snapshotsBefore",
      case when ${o.eventsRetentionDays}::int > 0 then now() - make_interval(days => ${o.eventsRetentionDays}::int) end as "eventsBefore"`;
  return row!;
}

/**
 * Drops `payload` and `payload_raw` of up to `limit` items settled before `before` (oldest first),
 * keeping the row, its state and error code, and the sha256 (hex) and size in bytes of the raw
 * text (`payload_raw` as received, else jsonb's text of `payload`). Rows another transaction
 * holds are skipped, not waited for; the state is checked again on the locked row, so an item a
 * replay has just re-opened (landed again) keeps its payload. Returns what went.
 */
export async function pruneItemPayloads(sql: Queryable, before: Date, limit: number): Promise<Freed> {
  const settledAt = frag(sql, SETTLED_AT);
  const states = frag(sql, PRUNABLE_STATES);
  const [row] = await sql<Freed[]>`
    with picked as (
      select job_id, video_id, ${frag(sql, PAYLOAD_SIZE)} as size
      from batch_items
      where payload_pruned_at is null and state in (${states}) and ${settledAt} < ${before}
      order by ${settledAt}
      limit ${limit}
      for update skip locked
    ), pruned as (
      update batch_items b set
        payload_sha256 = encode(sha256(convert_to(coalesce(b.payload_raw, b.payload::text), 'UTF8')), 'hex'),
        payload_bytes = octet_length(coalesce(b.payload_raw, b.payload::text)),
        payload = null,
        payload_raw = null,
        payload_pruned_at = now(),
        updated_at = now()
      from picked p
      where b.job_id = p.job_id and b.video_id = p.video_id
        and b.state in (${states}) and b.payload_pruned_at is null
      returning p.size
    )
    select count(*)::int as rows, coalesce(sum(size), 0)::float8 as bytes from pruned`;
  return row!;
}

/** What `pruneItemPayloads` would drop, all of it, changing nothing. */
export async function prunableItemPayloads(sql: Queryable, before: Date): Promise<Freed> {
  const [row] = await sql<Freed[]>`
    select count(*)::int as rows, coalesce(sum(${frag(sql, PAYLOAD_SIZE)}), 0)::float8 as bytes
    from batch_items
    where payload_pruned_at is null and state in (${frag(sql, PRUNABLE_STATES)}) and ${frag(sql, SETTLED_AT)} < ${before}`;
  return row!;
}

/** The history tables kept HISTORY_RETENTION_DAYS, by the column that dates a row. */
const HISTORY_TIME_COLUMN = {
  sync_runs: 'started_at',
  credit_charges: 'charged_at',
  passage_removals: 'removed_at',
} as const;
export type HistoryTable = keyof typeof HISTORY_TIME_COLUMN;

/** Deletes up to `limit` rows of `table` dated before `before` (oldest first); rows another transaction holds are skipped. */
export async function deleteHistoryRows(
  sql: Queryable,
  table: HistoryTable,
  before: Date,
  limit: number,
): Promise<Freed> {
  const at = sql(HISTORY_TIME_COLUMN[table]);
  const [row] = await sql<Freed[]>`
    with picked as (
      select id, pg_column_size(s.*) as size from ${sql(table)} s
      where ${at} < ${before} order by ${at} limit ${limit} for update skip locked
    ), gone as (
      delete from ${sql(table)} s using picked p where s.id = p.id returning p.size
    )
    select count(*)::int as rows, coalesce(sum(size), 0)::float8 as bytes from gone`;
  return row!;
}

/**
 * What `deleteHistoryRows` would delete, all of it, changing nothing. The row size is taken in a
 * CTE of the same shape as there: `pg_column_size(s.*)` of a scan that outputs only the whole row
 * measures it 1 byte smaller, and the dry run must print what the run then frees.
 */
export async function expiredHistoryRows(sql: Queryable, table: HistoryTable, before: Date): Promise<Freed> {
  const [row] = await sql<Freed[]>`
    with expired as materialized (
      select id, pg_column_size(s.*) as size from ${sql(table)} s where ${sql(HISTORY_TIME_COLUMN[table])} < ${before}
    )
    select count(*)::int as rows, coalesce(sum(size), 0)::float8 as bytes from expired`;
  return row!;
}

/**
 * The events a reader still needs are kept, whatever their age: those after an enabled webhook
 * endpoint's cursor (a failing endpoint, for up to WEBHOOK_DISABLE_AFTER_MS, gets them once it
 * recovers; a disabled one holds none) and after an export cursor's last event (`export
 * --cursor`: its next run writes what they touched). The same rule as oldestNeededEventId
 * (src/db/webhooks.ts), in SQL so the delete reads it in its own snapshot.
 */
const EVENTS_NEEDED_FROM = `coalesce(least(
  (select min(cursor) + 1 from webhook_endpoints where enabled),
  (select min(last_event_id) + 1 from export_cursors)), 'infinity'::numeric)`;

/** Deletes up to `limit` events that occurred before `before` (oldest first) and no endpoint needs. */
export async function deleteEvents(sql: Queryable, before: Date, limit: number): Promise<Freed> {
  const [row] = await sql<Freed[]>`
    with picked as (
      select id, pg_column_size(e.*) as size from events e
      where occurred_at < ${before} and id < ${frag(sql, EVENTS_NEEDED_FROM)}
      order by id limit ${limit} for update skip locked
    ), gone as (
      delete from events e using picked p where e.id = p.id returning p.size
    )
    select count(*)::int as rows, coalesce(sum(size), 0)::float8 as bytes from gone`;
  return row!;
}

/** What `deleteEvents` would delete, all of it, changing nothing (sized as there: see `expiredHistoryRows`). */
export async function expiredEvents(sql: Queryable, before: Date): Promise<Freed> {
  const [row] = await sql<Freed[]>`
    with expired as materialized (
      select id, pg_column_size(e.*) as size from events e where occurred_at < ${before} and id < ${frag(sql, EVENTS_NEEDED_FROM)}
    )
    select count(*)::int as rows, coalesce(sum(size), 0)::float8 as bytes from expired`;
  return row!;
}

/**
 * Where a thinning walk stands: after this snapshot, whose hour is `hour`. Null before the first
 * page. Times are the database's text and go back as text parameters: a JS Date would drop the
 * microseconds, and the page after would start at this very snapshot again (and take it, the
 * first of its hour, for a second one of that hour).
 */
export interface ThinCursor {
  takenAt: string;
  id: number;
  hour: string;
}

export interface ThinPage extends Freed {
  /** where the next page starts; null when this page was the last */
  next: ThinCursor | null;
}

/**
 * One page (`limit` snapshots taken before `before`, oldest first) of thinning `credit_snapshots`
 * to one an hour: each snapshot in the same hour as the one before it (the previous page's last
 * for the first) goes, so the first of each hour stays; the latest snapshot of all always stays.
 * With `dryRun`, counts what would go. Walk it from `after: null` until `next` is null.
 */
export async function thinCreditSnapshots(
  sql: Queryable,
  o: { before: Date; after: ThinCursor | null; limit: number; dryRun: boolean },
): Promise<ThinPage> {
  // from the beginning: before every snapshot (one plain range condition either way, which the
  // taken_at index serves; an `is null or` would not be, once the statement's plan is generic)
  const afterAt = o.after?.takenAt ?? '-infinity';
  const afterId = o.after?.id ?? 0;
  const prevHour = o.after?.hour ?? null;
  const [row] = await sql<
    (Freed & { n: number; lastAt: string | null; lastId: number | null; lastHour: string | null })[]
  >`
    with page as (
      select id, taken_at, date_trunc('hour', taken_at) as hour, pg_column_size(c.*) as size
      from credit_snapshots c
      where taken_at < ${o.before}
        and taken_at >= ${afterAt}::text::timestamptz and (taken_at, id) > (${afterAt}::text::timestamptz, ${afterId}::bigint)
      order by taken_at, id
      limit ${o.limit}
    ), ranked as (
      select id, taken_at, hour, size, coalesce(lag(hour) over (order by taken_at, id), ${prevHour}::text::timestamptz) as prev_hour
      from page
    ), doomed as (
      select id, size from ranked
      where prev_hour = hour
        and id is distinct from (select id from credit_snapshots order by taken_at desc, id desc limit 1)
    ), gone as (
      delete from credit_snapshots c using doomed d where c.id = d.id and not ${o.dryRun}::boolean returning d.size
    ), last as (
      select id, taken_at, hour from page order by taken_at desc, id desc limit 1
    )
    select
      (select count(*)::int from page) as n,
      case when ${o.dryRun}::boolean then (select count(*)::int from doomed) else (select count(*)::int from gone) end as rows,
      case when ${o.dryRun}::boolean then (select coalesce(sum(size), 0)::float8 from doomed)
        else (select coalesce(sum(size), 0)::float8 from gone) end as bytes,
      (select taken_at::text from last) as "lastAt",
      (select id from last) as "lastId",
      (select hour::text from last) as "lastHour"`;
  const r = row!;
  const next =
    r.n === o.limit && r.lastAt !== null ? { takenAt: r.lastAt, id: Number(r.lastId), hour: r.lastHour! } : null;
  return { rows: r.rows, bytes: r.bytes, next };
}

/** A run starts (a person's `prune`, or a dry run): its `prune_runs` ID. */
export async function startPruneRun(sql: Queryable, o: { dryRun: boolean; trigger: PruneTrigger }): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    insert into prune_runs (dry_run, trigger) values (${o.dryRun}, ${o.trigger}) returning id::float8 as id`;
  return row!.id;
}

/** A run ends: what it freed per table, and the error when it failed or was stopped. */
export async function finishPruneRun(
  sql: Queryable,
  id: number,
  freed: Record<PrunedTable, Freed>,
  error: string | null,
): Promise<void> {
  await sql`
    update prune_runs set finished_at = now(), freed = ${JSON.stringify(freed)}::text::jsonb, error = ${error}
    where id = ${id}`;
}

/**
 * The daily run, claimed by one daemon of many: under a transaction-scoped advisory lock (a
 * daemon claiming at the same moment gives up at once), when no daily run started within
 * `periodMs` has gone without error, a `prune_runs` row is written and its ID returned; otherwise
 * undefined. A run that failed or was stopped by a shutdown leaves the day open: the next check
 * tries again. One that died with its process (no error recorded) holds the day.
 */
export function claimDailyPrune(sql: Pool, periodMs: number): Promise<number | undefined> {
  return sql.begin(async (tx) => {
    const [lock] = await tx<
      { locked: boolean }[]
    >`select pg_try_advisory_xact_lock(${PRUNE_LOCK_NAMESPACE}, 0) as locked`;
    if (lock?.locked !== true) return undefined;
    const [recent] = await tx`
      select 1 from prune_runs
      where trigger = 'daily' and not dry_run and error is null
        and started_at > now() - make_interval(secs => ${periodMs / 1000})
      limit 1`;
    if (recent) return undefined;
    return startPruneRun(tx, { dryRun: false, trigger: 'daily' });
  });
}

/** A batch's stored items, and how many of them have lost their raw copy to retention. */
export interface StoredItemsRaw {
  /** items in state `sunk` */
  stored: number;
  /** of those, items whose payload was pruned */
  pruned: number;
  /** when the first and the last of them were pruned; null when none was */
  firstPrunedAt: Date | null;
  lastPrunedAt: Date | null;
}

/**
 * Locks the batch's stored (`sunk`) items until the transaction ends and says how many were
 * pruned: a caller that finds none may re-open them (`reopenSunk`) in the same transaction,
 * knowing prune cannot drop a payload in between (it skips locked rows, and checks the state
 * again once it holds one).
 */
export async function lockStoredItems(tx: Queryable, jobId: string): Promise<StoredItemsRaw> {
  const [row] = await tx<StoredItemsRaw[]>`
    with locked as (
      select payload_pruned_at from batch_items where job_id = ${jobId} and state = 'sunk' order by video_id for update
    )
    select count(*)::int as stored, count(payload_pruned_at)::int as pruned,
      min(payload_pruned_at) as "firstPrunedAt", max(payload_pruned_at) as "lastPrunedAt"
    from locked`;
  return row!;
}
