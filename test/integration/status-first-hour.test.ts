/**
 * What `status` and the overview say in a first hour: the batches ended in the last 24 h are the
 * latest ones (three fresh failures among sixty older completions are on the page), counted, and
 * the storage is a short summary with every table behind `--storage` (and in `--json`). The CLI
 * runs as a real process and the overview is read from Postgres; the batches are inserted in SQL
 * (no upstream is needed to read them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOverview, renderOverview } from '../../src/admin/overview.ts';
import { STATUS_STORAGE_TABLES_SHOWN } from '../../src/cli/status.ts';
import type { StatusReport } from '../../src/pipeline/read/status.ts';
import { endBatchLocally } from '../../src/db/batch-polls.ts';
import { expectExit } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/pipeline.ts';

const OLD_COMPLETED = 60;
const FRESH_FAILED = ['job-fresh-1', 'job-fresh-2', 'job-fresh-3'];

let database: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createTestDatabase('status-first-hour');
  env = { DATABASE_URL: database.url };
  const { sql } = database;
  // sixty batches completed 20 h ago, submitted before three that failed a minute ago
  await sql`
    insert into batches (job_id, kind, status, credits_estimated, request, submitted_at, completed_at, terminal_at, total, succeeded, failed)
    select 'job-old-' || i, 'video', 'completed', 2, '{}'::jsonb, now() - interval '21 hours' - i * interval '1 second',
      now() - interval '20 hours', now() - interval '20 hours', 1, 1, 0
    from generate_series(1, ${OLD_COMPLETED}) i`;
  for (const [i, jobId] of FRESH_FAILED.entries()) {
    await sql`
      insert into batches (job_id, kind, status, error_code, reason, credits_estimated, request, submitted_at, completed_at, terminal_at, total, succeeded, failed)
      values (${jobId}, 'video', 'failed', 'internal-error', 'upstream failed the batch', 2, '{}'::jsonb,
        now() - interval '5 minutes', now() - ${`${3 - i} minutes`}::interval, now() - ${`${3 - i} minutes`}::interval, 1, 0, 1)`;
  }
});

afterAll(async () => {
  await database?.drop();
});

describe('status and the overview after a first hour', () => {
  it('status --json .recent holds the latest batches first, the fresh failures among them, and counts every one', async () => {
    const r = await runCli(['status', '--json'], env);
    expectExit(r, 0);
    const report = JSON.parse(r.stdout) as StatusReport;
    expect(report.recent.slice(0, 3).map((b) => b.jobId)).toEqual([...FRESH_FAILED].reverse());
    expect(report.recentTotal).toBe(OLD_COMPLETED + FRESH_FAILED.length);
    // every table in JSON
    expect(report.storage.length).toBeGreaterThan(STATUS_STORAGE_TABLES_SHOWN);
  });

  it('status lists the fresh failures as needing attention and says how many ended', async () => {
    const r = await runCli(['status'], env);
    expectExit(r, 0);
    expect(r.stdout).toContain(
      `Batches ended in the last 24 h: ${OLD_COMPLETED + FRESH_FAILED.length} (the latest 50 read here`,
    );
    for (const jobId of FRESH_FAILED)
      expect(r.stdout).toMatch(new RegExp(`^${jobId}\\s+-\\s+video\\s+failed\\s+internal-error`, 'm'));
  });

  it('the overview shows the latest ten, the fresh failures first, and how many more there are', async () => {
    const page = renderOverview(await loadOverview(database.sql));
    const recent = /<section id="recent">[\s\S]*?<\/section>/.exec(page)?.[0] ?? '';
    const jobs = [...recent.matchAll(/<tr data-job-id="([^"]+)">/g)].map((m) => m[1]);
    expect(jobs).toHaveLength(10);
    expect(jobs.slice(0, 3)).toEqual([...FRESH_FAILED].reverse());
    expect(recent).toContain(`The latest 10 of ${OLD_COMPLETED + FRESH_FAILED.length}`);
    expect(recent).toContain('<a href="/batches" id="more-batches">');
  });

  it('status prints the total and the largest tables; --storage every table with its row estimate', async () => {
    const [short, full] = await Promise.all([runCli(['status'], env), runCli(['status', '--storage'], env)]);
    expectExit(short, 0);
    expectExit(full, 0);
    const [count] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from pg_class where relkind in ('r', 'p') and relnamespace = current_schema()::regnamespace`;
    const n = count!.n;
    const tableRows = (out: string) => {
      const lines = out.slice(out.indexOf('\nStorage: ')).split('\n').slice(2);
      const header = lines.findIndex((l) => /^table\s+total/.test(l));
      const rows: string[] = [];
      for (const l of lines.slice(header + 1)) {
        if (!/^[a-z_0-9]+\s+\d/.test(l)) break;
        rows.push(l);
      }
      return rows;
    };
    expect(short.stdout).toMatch(
      new RegExp(
        `^Storage: \\S+ [kMG]?B in ${n} tables; the largest ${STATUS_STORAGE_TABLES_SHOWN} \\(every table: videosite-ingest status --storage\\)$`,
        'm',
      ),
    );
    expect(tableRows(short.stdout)).toHaveLength(STATUS_STORAGE_TABLES_SHOWN);
    // no column of dashes: the summary has no row estimate, the full table says when there is none
    expect(short.stdout).not.toMatch(/^table\s+rows/m);
    expect(tableRows(full.stdout)).toHaveLength(n);
    expect(full.stdout).toMatch(/^table\s+total\s+TOAST\s+indexes\s+rows \(planner estimate\)/m);
  });

  it('after three failed batches a source is not fresh and gives its last error with code and time', async () => {
    const { sql } = database;
    const [source] = await sql<{ id: number }[]>`
      insert into sources (kind, ref, external_id, max_videos, title, last_synced_at)
      values ('playlist', 'PLfailing', 'PLfailing', 10, 'Failing source', now() - interval '10 minutes')
      returning id`;
    const id = source!.id;
    for (const n of [1, 2, 3]) {
      await sql`
        insert into batches (job_id, source_id, kind, status, credits_estimated, request)
        values (${`job-src-${n}`}, ${id}, 'video', 'active', 2, '{}'::jsonb)`;
      // how the poller ends a batch the upstream never finished
      await endBatchLocally(sql, `job-src-${n}`, {
        status: 'failed',
        errorCode: 'internal-error',
        reason: `attempt ${n} <x>`,
      });
    }
    const [json, text] = await Promise.all([runCli(['status', '--json'], env), runCli(['status'], env)]);
    expectExit(json, 0);
    expectExit(text, 0);
    const report = JSON.parse(json.stdout) as StatusReport;
    const row = report.sources.find((s) => s.id === id);
    expect(row).toMatchObject({ lastErrorCode: 'internal-error', lastError: 'batch job-src-3 failed: attempt 3 <x>' });
    expect(row!.lastErrorAt).not.toBeNull();
    expect(report.sourcesSummary).toMatchObject({ withError: 1, attention: 1 });
    expect(text.stdout).toMatch(
      new RegExp(`^${id}\\s+playlist\\s+Failing source\\s.*batch job-src-3 failed: attempt 3 <x> \\(`, 'm'),
    );
    // the overview's freshness pill
    const page = renderOverview(await loadOverview(sql));
    const tr = new RegExp(`<tr data-source-id="${id}">[\\s\\S]*?</tr>`).exec(page)?.[0] ?? '';
    expect(tr).toContain('failing');
    expect(tr).not.toContain('>fresh<');
    expect(tr).toContain('<code>internal-error</code> batch job-src-3 failed: attempt 3 &lt;x&gt;');
  });
});
