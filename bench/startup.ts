/**
 * `npm run bench:startup` (and the first section of `npm run bench`): how the command starts,
 * beside a bare `node -e 1` measured in the same run, against the targets of issue #13:
 * `videosite-ingest --help` within 4x bare node's time and 2x its memory, and of issue #34:
 * `status`, against a live Postgres and Redis (a fresh database, migrated, with STATUS_SOURCES
 * scheduled sources and nothing synced yet), within 3x bare node's time: it is what people and
 * scripts run most. Each command runs
 * STARTUP_RUNS times, interleaved with the others after one unmeasured run each (which warms the
 * file cache); its figures are the medians of wall time (spawn to exit) and peak RSS (VmHWM,
 * written by the process as it exits: bench/peak-rss.cjs). `status --help` shows what loading
 * one command costs. `node + postgres.js, 1 statement` (bench/postgres-floor.mjs) is the least
 * a command that reads Postgres can take, beside `status`'s target: node loads the driver, opens
 * one connection, runs `select 1` and exits, loading nothing of ours. `node + postgres.js, status's
 * statements` (bench/status-floor.mjs) is the least `status` itself can take: the same, sending the
 * statements `status` sends to the same database (recorded here from `collectStatus`, in order,
 * with their parameters) instead of `select 1`. Then a daemon (all roles, no
 * admin server) starts against a fresh database, queue prefix and an in-process simulator, and its
 * resident memory is read once it has been idle for DAEMON_IDLE_MS.
 *
 * The commands run as bin/videosite-ingest.js runs them: from dist/ when the build is current,
 * else from the sources through tsx, so `npm run bench:startup` (and `npm run bench`) build first.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { loadConfig } from '../src/config.ts';
import { migrateDatabase, quoteIdentifier, withDatabase } from '../src/db/migrate.ts';
import { collectStatus } from '../src/pipeline/read/status.ts';
import { closeRedis, createRedis, deletePrefixKeys } from '../src/queues/connection.ts';
import { startSimulator } from '../src/simulator/server.ts';
import { CliProcess, REPO_ROOT, shebangNodeArgs } from './procs.ts';

/** Measured runs per command (the median is reported). */
export const STARTUP_RUNS = 5;
/** How long the daemon idles after "daemon started" before its RSS is read, ms. */
export const DAEMON_IDLE_MS = 5_000;
/** Issue #13: `--help` within this many times bare node's wall time ... */
export const HELP_TIME_TARGET_X = 4;
/** ... and this many times its peak RSS. */
export const HELP_MEMORY_TARGET_X = 2;
/** Issue #34: `status` within this many times bare node's wall time. */
export const STATUS_TIME_TARGET_X = 3;
/** Sources in the database `status` reads, each on an hourly schedule (so it judges schedules, as it does for most people). */
export const STATUS_SOURCES = 3;

const BIN = join(REPO_ROOT, 'bin', 'videosite-ingest.js');
const PEAK_RSS_HOOK = join(REPO_ROOT, 'bench', 'peak-rss.cjs');
const POSTGRES_FLOOR = join(REPO_ROOT, 'bench', 'postgres-floor.mjs');
const STATUS_FLOOR = join(REPO_ROOT, 'bench', 'status-floor.mjs');
const DAEMON_START_TIMEOUT_MS = 60_000;

interface Probe {
  label: string;
  /** node's arguments after the hook */
  args: string[];
  /** added to the environment (PATH and HOME only otherwise) */
  env?: Record<string, string>;
}

export interface StartupFigure {
  label: string;
  wallMs: number;
  /**
   * user + system of every thread, as the process counts it at exit (its start-up before the
   * first script, ~40 ms for bare node, is not in it): unlike wall time, other work on the
   * machine hardly moves it
   */
  cpuMs: number;
  peakRssMb: number;
}

export interface StartupFigures {
  bareNode: StartupFigure;
  help: StartupFigure;
  statusHelp: StartupFigure;
  postgresFloor: StartupFigure;
  statusFloor: StartupFigure;
  status: StartupFigure;
  helpTimeX: number;
  helpMemoryX: number;
  statusTimeX: number;
  /** the floor's wall time against bare node's: what no command that reads Postgres can beat */
  floorTimeX: number;
  /** how many statements `status` sent (and bench/status-floor.mjs sends) */
  statusStatements: number;
  /** status-floor's wall time against bare node's: what no `status` asking the same questions can beat */
  statusFloorTimeX: number;
  daemon: { idleRssMb: number; peakRssMb: number; startMs: number };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

/** One run: wall ms from spawn to exit, and the CPU time and peak RSS the process reported (ms, MB). */
function runOnce(p: Probe): { wallMs: number; cpuMs: number; peakRssMb: number } {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--require', PEAK_RSS_HOOK, ...p.args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...p.env },
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  const wallMs = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${p.label} exited with ${r.status ?? r.signal}: ${r.stderr?.toString() ?? ''}`);
  const [kb, cpuMs] = ((r.output[3] as Buffer | null)?.toString() ?? '').split(' ').map(Number);
  if (!(kb! > 0) || !(cpuMs! >= 0)) throw new Error(`${p.label}: no peak RSS and CPU time reported on fd 3`);
  return { wallMs, cpuMs: cpuMs!, peakRssMb: kb! / 1024 };
}

/** The daemon's resident memory once idle, with a fresh database, queue prefix and simulator. */
async function measureDaemon(): Promise<StartupFigures['daemon']> {
  const config = loadConfig();
  const tag = randomBytes(4).toString('hex');
  const database = `vsi_bench_startup_${tag}`;
  const prefix = `{vsi-bench-startup-${tag}}`;
  const logDir = join(REPO_ROOT, 'bench', 'results', 'logs');
  mkdirSync(logDir, { recursive: true });
  const sim = await startSimulator();
  const redis = createRedis(config.redisUrl);
  let daemon: CliProcess | undefined;
  try {
    const t0 = Date.now();
    daemon = CliProcess.start(
      'startup-daemon',
      ['daemon'],
      {
        API_BASE_URL: sim.baseUrl,
        API_KEY: sim.apiKey,
        API_PLATFORM: sim.platform,
        DATABASE_URL: withDatabase(config.databaseUrl, database),
        REDIS_URL: config.redisUrl,
        QUEUE_PREFIX: prefix,
      },
      logDir,
    );
    await daemon.waitForLog((e) => e.event === 'daemon.started', DAEMON_START_TIMEOUT_MS);
    const startMs = Date.now() - t0;
    await new Promise((r) => setTimeout(r, DAEMON_IDLE_MS));
    const status = readFileSync(`/proc/${daemon.pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? NaN);
    return { idleRssMb: round1(kb('VmRSS') / 1024), peakRssMb: round1(kb('VmHWM') / 1024), startMs };
  } finally {
    await daemon?.stop(15_000);
    await deletePrefixKeys(redis, prefix).catch(() => {});
    await closeRedis(redis);
    await dropDatabase(config.databaseUrl, database);
    await sim.close();
  }
}

/** What `withStatusDatabase` hands its callback. */
interface StatusDatabase {
  /** the environment `status` runs with (PATH and HOME are added) */
  env: Record<string, string>;
  /** a JSON file of the statements `status` sends to this database, in order: `{ query, parameters }[]` */
  statementsFile: string;
  statements: number;
}

/**
 * A fresh database, migrated, with STATUS_SOURCES sources, and a queue prefix of its own, for
 * `status`; dropped after `fn`. The statements `status` sends to it are recorded from
 * `collectStatus`, with the options `status` passes in that environment (no API key, embeddings
 * off), through postgres.js's `debug` hook.
 */
async function withStatusDatabase<T>(fn: (db: StatusDatabase) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const tag = randomBytes(4).toString('hex');
  const url = withDatabase(config.databaseUrl, `vsi_bench_status_${tag}`);
  await migrateDatabase(url);
  const recorded: { query: string; parameters: unknown[] }[] = [];
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    debug: (_connection, query, parameters) => recorded.push({ query, parameters }),
  });
  try {
    await sql`
      insert into sources (kind, ref, external_id, max_videos, title, cron)
      select 'channel', '@startup' || i, 'UC_startup_' || i, 100, 'Start-up channel ' || i, '0 * * * *'
      from generate_series(1, ${STATUS_SOURCES}) i`;
    recorded.length = 0;
    await collectStatus(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
  const dir = mkdtempSync(join(tmpdir(), 'vsi-bench-status-'));
  const statementsFile = join(dir, 'statements.json');
  writeFileSync(statementsFile, JSON.stringify(recorded));
  try {
    return await fn({
      env: { DATABASE_URL: url, REDIS_URL: config.redisUrl, QUEUE_PREFIX: `{vsi-bench-status-${tag}}` },
      statementsFile,
      statements: recorded.length,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await dropDatabase(config.databaseUrl, `vsi_bench_status_${tag}`);
  }
}

async function dropDatabase(databaseUrl: string, database: string): Promise<void> {
  const admin = postgres(withDatabase(databaseUrl, 'postgres'), { max: 1, onnotice: () => {} });
  await admin
    .unsafe(`drop database if exists ${quoteIdentifier(database)} with (force)`)
    .finally(() => admin.end({ timeout: 5 }));
}

export async function measureStartup(): Promise<StartupFigures> {
  const nodeArgs = shebangNodeArgs();
  let statusStatements = 0;
  const figures = await withStatusDatabase(async ({ env, statementsFile, statements }) => {
    statusStatements = statements;
    const probes: Probe[] = [
      { label: 'node -e 1', args: ['-e', '1'] },
      { label: 'videosite-ingest --help', args: [...nodeArgs, BIN, '--help'] },
      { label: 'videosite-ingest status --help', args: [...nodeArgs, BIN, 'status', '--help'] },
      { label: 'node + postgres.js, 1 statement', args: [POSTGRES_FLOOR], env },
      { label: "node + postgres.js, status's statements", args: [STATUS_FLOOR, statementsFile], env },
      { label: 'videosite-ingest status', args: [...nodeArgs, BIN, 'status'], env },
    ];
    for (const p of probes) runOnce(p);
    const runs = probes.map(() => [] as ReturnType<typeof runOnce>[]);
    for (let i = 0; i < STARTUP_RUNS; i++) probes.forEach((p, j) => runs[j]!.push(runOnce(p)));
    return probes.map((p, j) => ({
      label: p.label,
      wallMs: round1(median(runs[j]!.map((r) => r.wallMs))),
      cpuMs: round1(median(runs[j]!.map((r) => r.cpuMs))),
      peakRssMb: round1(median(runs[j]!.map((r) => r.peakRssMb))),
    })) as [StartupFigure, StartupFigure, StartupFigure, StartupFigure, StartupFigure, StartupFigure];
  });
  const [bareNode, help, statusHelp, postgresFloor, statusFloor, status] = figures;
  const x = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  return {
    bareNode,
    help,
    statusHelp,
    postgresFloor,
    statusFloor,
    status,
    helpTimeX: x(help.wallMs, bareNode.wallMs),
    helpMemoryX: x(help.peakRssMb, bareNode.peakRssMb),
    statusTimeX: x(status.wallMs, bareNode.wallMs),
    floorTimeX: x(postgresFloor.wallMs, bareNode.wallMs),
    statusStatements,
    statusFloorTimeX: x(statusFloor.wallMs, bareNode.wallMs),
    daemon: await measureDaemon(),
  };
}

export function renderStartup(f: StartupFigures): string {
  const met = (x: number, target: number) => `${x}x (target <= ${target}x: ${x <= target ? 'met' : 'NOT met'})`;
  const row = (s: StartupFigure) =>
    `  ${s.label.padEnd(40)}${String(s.wallMs).padStart(8)} ms${String(s.cpuMs).padStart(8)} ms${String(s.peakRssMb).padStart(8)} MB`;
  return [
    `Startup (median of ${STARTUP_RUNS}):`,
    `  ${''.padEnd(40)}${'wall'.padStart(11)}${'CPU'.padStart(11)}${'peak RSS'.padStart(11)}`,
    row(f.bareNode),
    row(f.help),
    row(f.statusHelp),
    row(f.postgresFloor),
    row(f.statusFloor),
    row(f.status),
    `  --help vs bare node: time ${met(f.helpTimeX, HELP_TIME_TARGET_X)}, memory ${met(f.helpMemoryX, HELP_MEMORY_TARGET_X)}`,
    `  status vs bare node: time ${met(f.statusTimeX, STATUS_TIME_TARGET_X)} (a fresh database, ${STATUS_SOURCES} scheduled sources)`,
    `  node + postgres.js, 1 statement vs bare node: time ${f.floorTimeX}x (the least a command reading Postgres can take)`,
    `  node + postgres.js, status's ${f.statusStatements} statements vs bare node: time ${f.statusFloorTimeX}x ` +
      '(the least a status asking the same questions can take)',
    `  daemon: RSS ${f.daemon.idleRssMb} MB idle ${DAEMON_IDLE_MS / 1000} s after "daemon started" ` +
      `(peak ${f.daemon.peakRssMb} MB; started in ${f.daemon.startMs} ms)`,
    '',
  ].join('\n');
}

/** Measures and prints the report (stdout); the caller's process exit code is untouched. */
export async function reportStartup(): Promise<StartupFigures> {
  const f = await measureStartup();
  process.stdout.write(renderStartup(f));
  return f;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  reportStartup().catch((e: unknown) => {
    process.stderr.write(`bench:startup failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  });
}
