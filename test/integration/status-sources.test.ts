/**
 * `status` with more sources than it lists: the first STATUS_SOURCES_SHOWN, those needing
 * attention first, a summary line counting every source and naming the command that lists them
 * all; `--all-sources` lists every one, in text and in JSON. The CLI runs as a real process
 * against a database of its own; the sources are inserted in SQL (no upstream is needed to read
 * them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUS_SOURCES_SHOWN, type StatusReport } from '../../src/pipeline/read/status.ts';
import { expectExit } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/pipeline.ts';

const SOURCES = 60;

let database: TestDatabase;
let env: Record<string, string>;
/** the IDs of the sources, in order of insertion (= ID order) */
let ids: number[];
let withError: number;
let overdue: number;
let paused: number;
/** the sources needing attention, in the order `status` lists them */
let attention: number[];

beforeAll(async () => {
  database = await createTestDatabase('status-sources');
  env = { DATABASE_URL: database.url };
  const { sql } = database;
  // every source synced an hour ago, backfill only (never overdue): none needs attention but,
  // beyond the first STATUS_SOURCES_SHOWN by ID, the 55th (an error) and the 58th (a yearly
  // schedule it missed; the 59th, on the same schedule, synced since); the 30th is paused
  const rows = await sql<{ id: number }[]>`
    insert into sources (kind, ref, external_id, max_videos, title, cron, last_synced_at, paused, last_error, last_error_code, last_error_at)
    select 'playlist', 'PLstatus' || i, 'PLstatus' || i, 10, 'Status source ' || i,
      case when i in (58, 59) then '0 0 1 1 *' end,
      case when i = 58 then now() - interval '400 days' else now() - interval '1 hour' end, i = 30,
      case when i = 55 then 'upstream said no' end, case when i = 55 then 'forbidden' end, case when i = 55 then now() end
    from generate_series(1, ${SOURCES}) i
    order by i
    returning id`;
  ids = rows.map((r) => r.id).sort((a, b) => a - b);
  withError = ids[54]!;
  overdue = ids[57]!;
  paused = ids[29]!;
  attention = [withError, overdue];
});

afterAll(async () => {
  await database?.drop();
});

/** The IDs of the rows of the sources table a `status` printed, in order. */
function sourceRows(stdout: string): number[] {
  const lines = stdout.split('\n');
  const header = lines.findIndex((l) => /^id\s+kind\s+title/.test(l));
  expect(header, stdout).toBeGreaterThanOrEqual(0);
  const rows: number[] = [];
  for (const line of lines.slice(header + 1)) {
    const m = /^(\d+)\s/.exec(line);
    if (!m) break;
    rows.push(Number(m[1]));
  }
  return rows;
}

describe('status with more sources than it lists', () => {
  it(`lists ${STATUS_SOURCES_SHOWN}, those needing attention first, and says how to see every source`, async () => {
    const r = await runCli(['status'], env);
    expectExit(r, 0);
    const rows = sourceRows(r.stdout);
    expect(rows).toHaveLength(STATUS_SOURCES_SHOWN);
    // the sources needing attention first, then the rest by ID (the paused one among them)
    expect(rows).toEqual([
      ...attention,
      ...ids.filter((id) => !attention.includes(id)).slice(0, STATUS_SOURCES_SHOWN - attention.length),
    ]);
    expect(rows).toContain(paused);
    expect(r.stdout).toContain(
      `Sources: ${SOURCES} (2 need attention: 1 with an error, 1 overdue, 0 never synced; 1 paused); ` +
        `showing ${STATUS_SOURCES_SHOWN}, the ones needing attention first; every source: videosite-ingest status --all-sources\n`,
    );
  });

  it('--all-sources lists every source', async () => {
    const r = await runCli(['status', '--all-sources'], env);
    expectExit(r, 0);
    const rows = sourceRows(r.stdout);
    expect(rows).toHaveLength(SOURCES);
    expect(rows).toEqual([...attention, ...ids.filter((id) => !attention.includes(id))]);
    expect(r.stdout).toContain(
      `Sources: ${SOURCES} (2 need attention: 1 with an error, 1 overdue, 0 never synced; 1 paused); all shown`,
    );
  });

  it('--json has the sources shown and a summary of every source; with --all-sources every one', async () => {
    const [some, all] = await Promise.all([
      runCli(['status', '--json'], env),
      runCli(['status', '--json', '--all-sources'], env),
    ]);
    expectExit(some, 0);
    expectExit(all, 0);
    const report = JSON.parse(some.stdout) as StatusReport;
    const summary = { total: SOURCES, paused: 1, withError: 1, overdue: 1, neverSynced: 0, attention: 2 };
    expect(report.sourcesSummary).toEqual({ ...summary, shown: STATUS_SOURCES_SHOWN });
    expect(report.sources.map((s) => s.id)).toEqual([
      ...attention,
      ...ids.filter((id) => !attention.includes(id)).slice(0, STATUS_SOURCES_SHOWN - attention.length),
    ]);
    expect(report.sources[0]).toMatchObject({
      id: withError,
      lastError: 'upstream said no',
      lastErrorCode: 'forbidden',
      videos: 0,
      transcripts: 0,
    });
    const every = JSON.parse(all.stdout) as StatusReport;
    expect(every.sourcesSummary).toEqual({ ...summary, shown: SOURCES });
    expect(every.sources).toHaveLength(SOURCES);
  });
});
