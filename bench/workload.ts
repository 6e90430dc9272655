/**
 * One pipeline workload as a user runs it: a daemon with poller and sink workers already
 * running, then `backfill --source ...` (which runs its own poller and sink workers too) from
 * spawn to exit. The figures come from what a user can check: the simulator's request counts,
 * `/me`, the rows in Postgres, the batches table, the processes' logs and their peak RSS.
 */
import type { SimulatorStats } from '../src/simulator/stats.ts';
import { landingLag, type LagResult } from './lag.ts';
import { CliProcess, type ProcResult } from './procs.ts';
import type { BenchEnv } from './setup.ts';
import { pollBudget, SIM_ITEMS_PER_SECOND, WORKLOAD_TIMEOUT_MS } from './settings.ts';

export interface BatchFigures {
  jobId: string;
  kind: string;
  items: number;
  polls: number;
  /** submitted to upstream completedAt, s */
  durationS: number;
  pollBudget: number;
}

export interface RequestCounts {
  total: number;
  byEndpoint: Record<string, number>;
}

export interface WorkloadFigures {
  name: string;
  /**
   * backfill exited 0, or 1 only because items were quarantined (kept raw with the reason: the
   * simulator's catalog has a few values Postgres cannot store as delivered, on purpose)
   */
  ok: boolean;
  exitCode: number | null;
  /** backfill's summary when it did not exit 0 */
  problems?: string;
  /** backfill spawn to exit, s */
  wallS: number;
  /** videos in the workload's metadata batches */
  videos: number;
  videosPerS: number;
  rows: { videos: number; transcripts: number; total: number };
  rowsPerS: number;
  /** transcript JSON (chunks) written, MB (10^6 bytes) */
  transcriptMb: number;
  transcriptMbPerS: number;
  apiRequests: RequestCounts;
  /** usedCredits after - before (/me) */
  credits: number;
  /** what the simulator says it charged (a cross-check of `credits`) */
  creditsCharged: number;
  batches: BatchFigures[];
  pollsPerBatch: { mean: number; max: number };
  /** every batch polled fewer times than its budget */
  pollsWithinBudget: boolean;
  landing: LagResult;
  /** per process: peak RSS, MB */
  peakRssMb: Record<string, number>;
  /** per process: CPU time used (user + system), s */
  cpuS: Record<string, number>;
  /** batch_items of the workload by state */
  items: Record<string, number>;
  jobIds: string[];
  errors: string[];
}

export function requestDiff(before: SimulatorStats, after: SimulatorStats): RequestCounts {
  const byEndpoint: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.byEndpoint)) {
    const n = v.total - (before.byEndpoint[k]?.total ?? 0);
    if (n > 0) byEndpoint[k] = n;
  }
  return { total: after.total - before.total, byEndpoint };
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export async function runWorkload(env: BenchEnv, name: string, sourceIds: number[]): Promise<WorkloadFigures> {
  const { sql } = env.db;
  const jobsBefore = new Set((await sql<{ job_id: string }[]>`select job_id from batches`).map((r) => r.job_id));

  const daemon = CliProcess.start(
    `${name}-daemon`,
    ['daemon', '--role', 'poller,sink'],
    env.cliEnv,
    env.logDir,
    env.nodeArgs,
  );
  let backfill: CliProcess | undefined;
  let bf: ProcResult;
  let statsBefore: SimulatorStats;
  let statsAfter: SimulatorStats;
  let usedBefore: number;
  let usedAfter: number;
  try {
    await daemon.waitForLog((e) => e.event === 'daemon.started', 60_000);
    statsBefore = env.sim.stats();
    usedBefore = (await env.api.me()).usedCredits;
    backfill = CliProcess.start(
      `${name}-backfill`,
      ['backfill', '--source', sourceIds.join(','), '--timeout', `${Math.round(WORKLOAD_TIMEOUT_MS / 1000)}s`],
      env.cliEnv,
      env.logDir,
      env.nodeArgs,
    );
    bf = await backfill.done;
    usedAfter = (await env.api.me()).usedCredits;
    statsAfter = env.sim.stats();
  } catch (e: unknown) {
    backfill?.kill();
    daemon.kill();
    throw e;
  }
  const d: ProcResult = await daemon.stop();

  const jobIds = (await sql<{ job_id: string }[]>`select job_id from batches`)
    .map((r) => r.job_id)
    .filter((j) => !jobsBefore.has(j));
  const batchRows = await sql<
    {
      job_id: string;
      kind: string;
      total: number | null;
      polls: number;
      submitted_at: Date;
      completed_at: Date | null;
    }[]
  >`
    select job_id, kind, total, polls, submitted_at, completed_at from batches
    where job_id = any(${jobIds}::text[]) order by submitted_at`;
  const batches: BatchFigures[] = batchRows.map((b) => {
    const durationS = b.completed_at ? (b.completed_at.getTime() - b.submitted_at.getTime()) / 1000 : NaN;
    return {
      jobId: b.job_id,
      kind: b.kind,
      items: b.total ?? 0,
      polls: b.polls,
      durationS: round(durationS),
      pollBudget: round(pollBudget(durationS)),
    };
  });
  const [rows] = await sql<{ videos: number; transcripts: number; transcript_bytes: number }[]>`
    select
      (select count(*)::int from videos where last_job_id = any(${jobIds}::text[])) as videos,
      (select count(*)::int from transcripts where last_job_id = any(${jobIds}::text[])) as transcripts,
      (select coalesce(sum(coalesce(octet_length(chunks::text), octet_length(text))), 0)::float8
        from transcripts where last_job_id = any(${jobIds}::text[])) as transcript_bytes`;
  const items: Record<string, number> = {};
  for (const r of await sql<{ state: string; n: number }[]>`
    select state, count(*)::int as n from batch_items where job_id = any(${jobIds}::text[]) group by state`) {
    items[r.state] = r.n;
  }

  const wallS = bf.wallMs / 1000;
  const problemLines = bf.stdout.split('\n').filter((l) => l.startsWith('  - '));
  const onlyQuarantined =
    bf.code === 1 && problemLines.length > 0 && problemLines.every((l) => l.includes('quarantined'));
  const videos = batches.filter((b) => b.kind === 'video').reduce((n, b) => n + b.items, 0);
  const totalRows = rows!.videos + rows!.transcripts;
  const transcriptMb = rows!.transcript_bytes / 1e6;
  const polls = batches.map((b) => b.polls);
  const completedAt = new Map(batchRows.map((b) => [b.job_id, b.completed_at]));
  const landing = landingLag(
    batches
      .filter((b) => completedAt.get(b.jobId))
      .map((b) => ({ jobId: b.jobId, total: b.items, completedAtMs: completedAt.get(b.jobId)!.getTime() })),
    [...daemon.events, ...backfill.events],
    SIM_ITEMS_PER_SECOND,
  );
  return {
    name,
    ok: bf.code === 0 || onlyQuarantined,
    exitCode: bf.code,
    ...(bf.code === 0 ? {} : { problems: problemLines.join('\n').slice(0, 4000) || bf.stdout.slice(-4000) }),
    wallS: round(wallS),
    videos,
    videosPerS: round(videos / wallS),
    rows: { videos: rows!.videos, transcripts: rows!.transcripts, total: totalRows },
    rowsPerS: round(totalRows / wallS),
    transcriptMb: round(transcriptMb),
    transcriptMbPerS: round(transcriptMb / wallS),
    apiRequests: requestDiff(statsBefore, statsAfter),
    credits: usedAfter - usedBefore,
    creditsCharged: statsAfter.creditsCharged - statsBefore.creditsCharged,
    batches,
    pollsPerBatch: {
      mean: polls.length ? round(polls.reduce((a, b) => a + b, 0) / polls.length) : 0,
      max: polls.length ? Math.max(...polls) : 0,
    },
    pollsWithinBudget: batches.every((b) => b.polls < b.pollBudget),
    landing,
    peakRssMb: { daemon: round(d.peakRssMb, 1), backfill: round(bf.peakRssMb, 1) },
    cpuS: { daemon: round(d.cpuS, 1), backfill: round(bf.cpuS, 1) },
    items,
    jobIds,
    errors: [...d.errors, ...bf.errors].slice(0, 20),
  };
}
