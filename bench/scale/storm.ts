/**
 * The storm: every source on one cron minute, fired by one real daemon (`videosite-ingest daemon
 * --role scheduler`, its other roles idle here: the syncs find nothing due) against the
 * simulator, with an API rate far above what the listings need, so what is measured is the
 * daemon's own scheduling and its connection pool. Counted from Postgres (`sync_runs` of the
 * minute), the queue, and the daemon's log.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type postgres from 'postgres';
import type { Redis } from 'ioredis';
import { readPeakRssKb, shebangNodeArgs } from '../procs.ts';
import type { RootApi } from './root.ts';
import { STORM_ENV, STORM_LEAD_MS, STORM_RETENTION_OFF_ENV, STORM_TIMEOUT_MS, STORM_TROUBLE_RE } from './settings.ts';

export interface StormFigures {
  sources: number;
  /** the cron minute, ISO */
  firedAt: string;
  started: number;
  finished: number;
  outcomes: Record<string, number>;
  /** cron minute to the first sync run's start, s */
  firstStartS: number | null;
  /** cron minute to the last sync run's end, s */
  durationS: number | null;
  /** error-level lines (pino >= 50) */
  errorLines: number;
  /** the first of them, shortened */
  firstError: string | null;
  /** warn-or-worse lines naming the pool, a timeout or too many connections */
  troubleLines: string[];
  failedJobs: number;
  peakRssMb: number;
  exitCode: number | null;
  logPath: string;
  ok: boolean;
}

export interface StormOptions {
  root: RootApi;
  sql: postgres.Sql;
  redis: Redis;
  env: Record<string, string>;
  prefix: string;
  logPath: string;
  say(line: string): void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function runStorm(o: StormOptions): Promise<StormFigures> {
  const [{ n: sources }] = (await o.sql`select count(*)::int as n from sources where not paused`) as unknown as [
    { n: number },
  ];
  const fire = new Date(Math.ceil((Date.now() + STORM_LEAD_MS) / 60_000) * 60_000);
  const cron = `${fire.getUTCMinutes()} ${fire.getUTCHours()} * * *`;
  await o.sql`update sources set cron = ${cron}`;
  o.say(`storm: ${sources} sources on cron '${cron}' (UTC), fires at ${fire.toISOString()}; daemon --role scheduler`);

  const log = createWriteStream(o.logPath);
  const child = spawn(process.execPath, [...shebangNodeArgs(), o.root.bin, 'daemon', '--role', 'scheduler'], {
    cwd: o.root.dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...o.env,
      ...STORM_ENV,
      ...(o.root.prune ? STORM_RETENTION_OFF_ENV : {}),
      QUEUE_PREFIX: o.prefix,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errorLines = 0;
  let firstError: string | null = null;
  const troubleLines: string[] = [];
  let peakKb = 0;
  const rss = setInterval(() => {
    peakKb = Math.max(peakKb, readPeakRssKb(child.pid ?? -1) ?? 0);
  }, 200);
  child.stdout.on('data', (d: Buffer) => log.write(d));
  const lines = createInterface({ input: child.stderr });
  lines.on('line', (line) => {
    log.write(`${line}\n`);
    let level = 50;
    try {
      level = (JSON.parse(line) as { level?: number }).level ?? 50;
    } catch {
      // not a log line (a crash's stack): counted as an error
    }
    if (level >= 50) {
      errorLines++;
      firstError ??= line.slice(0, 300);
    }
    if (level >= 40 && STORM_TROUBLE_RE.test(line) && troubleLines.length < 5) troubleLines.push(line.slice(0, 300));
  });
  let exitCode: number | null = null;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );

  let row = { started: 0, finished: 0, first: null as Date | null, last: null as Date | null };
  let outcomes: Record<string, number>;
  try {
    await Promise.race([sleep(Math.max(0, fire.getTime() - Date.now())), exited]);
    const deadline = fire.getTime() + STORM_TIMEOUT_MS;
    while (exitCode === null && Date.now() < deadline) {
      await sleep(1_000);
      const [r] = await o.sql<{ started: number; finished: number; first: Date | null; last: Date | null }[]>`
        select count(*)::int as started, count(finished_at)::int as finished, min(started_at) as first, max(finished_at) as last
        from sync_runs where started_at >= ${new Date(fire.getTime() - 5_000)}`;
      row = r!;
      if (row.finished >= sources && row.started === row.finished) break;
    }
    outcomes = Object.fromEntries(
      (
        await o.sql<{ outcome: string; n: number }[]>`
          select coalesce(outcome, 'unfinished') as outcome, count(*)::int as n from sync_runs
          where started_at >= ${new Date(fire.getTime() - 5_000)} group by 1 order by 2 desc`
      ).map((r) => [r.outcome, r.n]),
    );
  } finally {
    if (exitCode === null) child.kill('SIGTERM');
    const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(kill);
    clearInterval(rss);
    log.end();
  }
  const queues = o.root.createQueues(o.redis, o.prefix);
  const failedJobs = (await queues.schedule.getJobCounts('failed')).failed ?? 0;
  await queues.close();
  await o.root.deletePrefixKeys(o.redis, o.prefix);

  const since = (d: Date | null) => (d === null ? null : Math.round((d.getTime() - fire.getTime()) / 100) / 10);
  const bad = Object.entries(outcomes)
    .filter(([k]) => k !== 'up-to-date' && k !== 'submitted')
    .reduce((n, [, c]) => n + c, 0);
  return {
    sources,
    firedAt: fire.toISOString(),
    started: row.started,
    finished: row.finished,
    outcomes,
    firstStartS: since(row.first),
    durationS: since(row.last),
    errorLines,
    firstError,
    troubleLines,
    failedJobs,
    peakRssMb: Math.round(peakKb / 1024),
    // SIGTERM's graceful exit is 0
    exitCode,
    logPath: o.logPath,
    ok: row.finished === sources && bad === 0 && errorLines === 0 && troubleLines.length === 0 && failedJobs === 0,
  };
}
