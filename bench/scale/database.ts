/**
 * A fresh database per history size: created and migrated with the measured tree's own
 * migrations, seeded, its counters checked, then analysed and vacuumed so that the measurements
 * see what a database that has been running a year sees (statistics current, the visibility map
 * set, so index-only scans are index-only).
 */
import postgres from 'postgres';
import { quoteIdentifier, withDatabase } from '../../src/db/migrate.ts';
import { ITEM_COUNT_SHARDS } from '../../src/domain/items.ts';

/** The summary tables migrations/0005 and 0008 keep by triggers, and how each is filled from scratch. */
const COUNTERS: { table: string; check: string; backfill: string }[] = [
  {
    table: 'batch_item_counts',
    check: `select (select coalesce(sum(n), 0) from batch_item_counts)::float8 as counted, (select count(*) from batch_items)::float8 as actual`,
    backfill: `insert into batch_item_counts (job_id, state, error_code, n)
      select job_id, state, coalesce(error_code, ''), count(*) from batch_items group by 1, 2, 3`,
  },
  {
    table: 'item_counts',
    check: `select (select coalesce(sum(n), 0) from item_counts)::float8 as counted, (select count(*) from batch_items)::float8 as actual`,
    backfill: `insert into item_counts (shard, state, error_code, reason_code, n)
      select abs(hashtext(job_id)) % ${ITEM_COUNT_SHARDS}, state, coalesce(error_code, ''), coalesce(reason_code, ''), count(*)
      from batch_items group by 1, 2, 3, 4`,
  },
  {
    table: 'source_stats',
    check: `select (select coalesce(sum(videos), 0) from source_stats)::float8 as counted,
      (select count(*) from source_videos sv join videos v on v.id = sv.video_id)::float8 as actual`,
    backfill: `insert into source_stats (source_id, videos, transcripts)
      select s.id,
        (select count(*) from source_videos sv join videos v on v.id = sv.video_id where sv.source_id = s.id),
        (select count(*) from source_videos sv join transcripts t on t.video_id = sv.video_id where sv.source_id = s.id)
      from sources s
      on conflict (source_id) do update set videos = excluded.videos, transcripts = excluded.transcripts`,
  },
  {
    table: 'video_outcome_counts',
    check: `select (select coalesce(sum(n), 0) from video_outcome_counts)::float8 as counted, (select count(*) from video_sync)::float8 as actual`,
    backfill: `insert into video_outcome_counts (shard, kind, lang, state, error_code, delivered_lang, n)
      select 0, kind, lang, coalesce(last_state, ''), coalesce(last_error_code, ''), coalesce(delivered_lang, ''), count(*)
      from video_sync group by 2, 3, 4, 5, 6`,
  },
];

export function adminClient(serverUrl: string): postgres.Sql {
  return postgres(withDatabase(serverUrl, 'postgres'), { max: 1, onnotice: () => {} });
}

export async function databaseExists(serverUrl: string, name: string): Promise<boolean> {
  const admin = adminClient(serverUrl);
  try {
    const [r] = await admin<
      { yes: boolean }[]
    >`select exists (select 1 from pg_database where datname = ${name}) as yes`;
    return r!.yes;
  } finally {
    await admin.end({ timeout: 5 });
  }
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = adminClient(serverUrl);
  try {
    await admin.unsafe(`drop database if exists ${quoteIdentifier(name)} with (force)`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/**
 * The counters after seeding: kept by the triggers when the tree has them; a counter table that
 * exists but stayed empty (a tree whose triggers came later) is filled the way its migration
 * fills it. A counter that disagrees with its table is reported, not fixed: that is a finding.
 */
export async function checkCounters(sql: postgres.Sql, say: (line: string) => void): Promise<string[]> {
  const problems: string[] = [];
  const present = new Set(
    (
      await sql<
        { t: string }[]
      >`select relname as t from pg_class where relkind = 'r' and relnamespace = current_schema()::regnamespace`
    ).map((r) => r.t),
  );
  for (const c of COUNTERS) {
    if (!present.has(c.table)) continue;
    const [before] = await sql.unsafe<{ counted: number; actual: number }[]>(c.check);
    if (before!.counted === 0 && before!.actual > 0) {
      say(`seed: ${c.table} is empty after seeding (no trigger keeps it): filling it as its migration does`);
      await sql.unsafe(c.backfill);
      continue;
    }
    if (before!.counted !== before!.actual) {
      problems.push(`${c.table}: counts ${before!.counted}, the tables hold ${before!.actual}`);
    }
  }
  return problems;
}

/** ANALYZE and VACUUM every table of the schema, on two connections (largest tables first). */
export async function vacuumAnalyze(sql: postgres.Sql): Promise<void> {
  const tables = await sql<{ t: string; bytes: number }[]>`
    select relname as t, pg_relation_size(oid)::float8 as bytes from pg_class
    where relkind = 'r' and relnamespace = current_schema()::regnamespace order by 2 desc`;
  // each table to the lane with less to read so far
  const lanes: { tables: string[]; bytes: number }[] = [
    { tables: [], bytes: 0 },
    { tables: [], bytes: 0 },
  ];
  for (const { t, bytes } of tables) {
    const lane = lanes[0]!.bytes <= lanes[1]!.bytes ? lanes[0]! : lanes[1]!;
    lane.tables.push(t);
    lane.bytes += bytes;
  }
  await Promise.all(
    lanes.map(async (lane) => {
      // the visibility map is the heap's; TOAST is read through the heap's pointers
      for (const t of lane.tables) await sql.unsafe(`vacuum (analyze, process_toast false) ${quoteIdentifier(t)}`);
    }),
  );
}
