/**
 * `backfill`: sync sources now and wait until every row has landed. It runs its own poller and
 * sink workers (daemons, if any, share the work through the same queues), shows progress on
 * stderr, prints a summary on stdout, and exits 0 only if everything landed.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { batchProgress } from '../db/batch-progress.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { allSourceIds, existingSourceIds } from '../db/sources.ts';
import { runBackfill, type BackfillReport } from '../pipeline/backfill.ts';
import { reconcile } from '../pipeline/reconcile.ts';
import { startWorkers } from '../pipeline/workers.ts';
import { intArg, parseDurationMs } from './args.ts';
import { createContext, type Context } from './context.ts';
import { UsageError } from './exit.ts';
import { createProgressView } from './progress.ts';
import { waitForRedis } from './redis-ready.ts';
import { renderTable } from './table.ts';

export interface BackfillCommandOptions {
  source?: number[];
  all: boolean;
  wait: boolean;
  timeout?: number;
}

function sourceIdsArg(value: string, previous: number[] = []): number[] {
  const ids: number[] = [];
  for (const part of value.split(',')) {
    try {
      ids.push(intArg(1, 2_147_483_647)(part.trim()));
    } catch {
      throw new InvalidArgumentError(`"${part}" is not a source ID (see: sources list).`);
    }
  }
  return [...previous, ...ids];
}

export function renderBackfillReport(r: BackfillReport): string {
  const out: string[] = [];
  for (const s of r.syncs) {
    out.push(
      `source ${s.sourceId}: ${s.outcome}` +
        (s.listed ? `, ${s.listed} listed` : '') +
        (s.listingCredits ? ` (listing: ${s.listingCredits} credit${s.listingCredits === 1 ? '' : 's'})` : '') +
        (s.jobIds.length ? `, ${s.submitted} video(s) submitted in ${s.jobIds.length} batch(es), ~${s.creditsEstimated} credits` : '') +
        (s.detail ? ` (${s.detail})` : '') +
        '\n',
    );
  }
  for (const e of r.syncErrors) out.push(`source ${e.sourceId}: error ${e.code}: ${e.message}\n`);
  if (r.batches.length > 0) {
    out.push(
      renderTable(
        ['job', 'source', 'kind', 'status', 'total', 'stored', 'failed', 'retryable', 'quarantined', 'errors'],
        r.batches.map((b) => [
          b.jobId, b.sourceId, b.kind + (b.lang ? ` ${b.lang}` : ''), b.status + (b.errorCode ? ` (${b.errorCode})` : ''),
          b.total, b.sunk, b.failed, b.retryable, b.quarantined,
          Object.entries(b.errors).map(([k, v]) => `${k}:${v}`).join(' ') || '-',
        ]),
      ),
    );
  }
  if (r.problems.length > 0) {
    out.push(`not everything landed (exit ${r.exitCode}):\n`);
    for (const p of r.problems) out.push(`  - ${p}\n`);
  } else if (r.syncs.length === 0 && r.batches.length === 0) {
    // `--all` on an empty installation: "everything landed" would suggest data is there
    out.push('nothing to sync: no sources registered (add one: videosite-ingest sources add channel @handle)\n');
  } else if (!r.waited) {
    out.push('submitted; not waiting (--no-wait): a daemon lands the rows; see: videosite-ingest status\n');
  } else {
    out.push('everything landed\n');
  }
  return out.join('');
}

/** The whole backfill, for the command and for `demo`. Returns the exit code. */
export async function backfillWithContext(ctx: Context, o: BackfillCommandOptions): Promise<{ report: BackfillReport; exitCode: number }> {
  const { sql } = ctx.db();
  let ids: number[];
  if (o.all) {
    ids = await allSourceIds(sql);
  } else {
    ids = [...new Set(o.source ?? [])];
    const known = await existingSourceIds(sql, ids);
    const missing = ids.filter((id) => !known.has(id));
    if (missing.length > 0) throw new UsageError(`--source: no source with ID ${missing.join(', ')} (see: sources list)`);
  }
  // the rate limiter and the queues live in Redis: with Redis down, fail now instead of hanging
  await waitForRedis(ctx.redis());
  const deps = ctx.deps();
  await reconcile(deps);
  const workers = o.wait ? startWorkers(deps, { roles: ['poller', 'sink'], connection: ctx.redis() }) : undefined;
  // one bar per batch on a terminal, a line per change elsewhere (stderr: stdout is the report)
  const progress = createProgressView(process.stderr);
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const report = await runBackfill(deps, {
      sourceIds: ids,
      wait: o.wait,
      timeoutMs: o.timeout,
      signal: abort.signal,
      onProgress: (batches) => {
        if (o.wait) progress.update(batches);
      },
    });
    if (abort.signal.aborted) {
      report.problems.push('interrupted: the batches go on upstream; a daemon or the next backfill picks them up');
      report.exitCode = report.exitCode === 0 ? 1 : report.exitCode;
    }
    if (!o.wait) report.batches = await batchProgress(sql, report.syncs.flatMap((s) => s.jobIds));
    return { report, exitCode: report.exitCode };
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await workers?.close();
  }
}

export function registerBackfillCommand(program: Command): void {
  program
    .command('backfill')
    .description('sync sources now, wait until every row has landed, exit 0 only if all landed')
    .option('--source <id...>', 'source IDs to sync (repeatable, or comma-separated)', sourceIdsArg)
    .option('--all', 'sync every registered source', false)
    .option('--no-wait', 'submit and return at once; daemons finish the work')
    .option('--timeout <duration>', 'stop waiting after this long (e.g. 90s, 15m, 2h); exit 1 if not done', (v) => {
      try {
        return parseDurationMs(v);
      } catch (e) {
        throw e instanceof InvalidArgumentError ? e : new InvalidArgumentError(String(e));
      }
    })
    .addHelpText(
      'after',
      '\nExit codes: 0 everything landed; 1 a batch failed or expired, or items are left retryable;\n' +
        '2 usage or configuration error; 3 the upstream refused (auth, plan, credits).',
    )
    .action(async (o: BackfillCommandOptions) => {
      if (o.all === (o.source !== undefined && o.source.length > 0)) {
        throw new UsageError('give either --source ID (one or more) or --all');
      }
      const ctx = createContext();
      try {
        await migrateDatabase(ctx.config.databaseUrl, ctx.log);
        const { report, exitCode } = await backfillWithContext(ctx, o);
        process.stdout.write(renderBackfillReport(report));
        process.exitCode = exitCode;
      } finally {
        await ctx.close();
      }
    });
}

