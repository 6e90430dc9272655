/**
 * `backfill`: sync sources now and wait until every row has landed. It runs its own poller and
 * sink workers (daemons, if any, share the work through the same queues), shows progress on
 * stderr, prints a summary on stdout, and exits 0 only if everything landed.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { migrateDatabase } from '../db/migrate.ts';
import { batchProgress, runBackfill, type BackfillReport, type BatchProgress } from '../pipeline/backfill.ts';
import { reconcile } from '../pipeline/reconcile.ts';
import { startWorkers } from '../pipeline/workers.ts';
import { intArg, parseDurationMs } from './args.ts';
import { createContext, type Context } from './context.ts';
import { UsageError } from './exit.ts';
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

function progressLine(batches: BatchProgress[], startedAt: number): string {
  const done = batches.filter((b) => ['completed', 'failed', 'expired'].includes(b.status) && b.landed === 0).length;
  const total = batches.reduce((n, b) => n + (b.total ?? 0), 0);
  const stored = batches.reduce((n, b) => n + b.sunk, 0);
  const landed = batches.reduce((n, b) => n + b.landed, 0);
  const failed = batches.reduce((n, b) => n + b.failed, 0);
  const retryable = batches.reduce((n, b) => n + b.retryable, 0);
  const secs = Math.round((Date.now() - startedAt) / 1000);
  return (
    `backfill [${secs}s] batches ${done}/${batches.length} done; items: ${stored} stored, ${landed} landing` +
    `, ${failed} failed, ${retryable} retryable${total ? ` of ${total}` : ''}`
  );
}

export function renderBackfillReport(r: BackfillReport): string {
  const out: string[] = [];
  for (const s of r.syncs) {
    out.push(
      `source ${s.sourceId}: ${s.outcome}` +
        (s.listed ? `, ${s.listed} listed` : '') +
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
    ids = (await sql<{ id: number }[]>`select id from sources order by id`).map((r) => r.id);
  } else {
    ids = [...new Set(o.source ?? [])];
    const known = new Set((await sql<{ id: number }[]>`select id from sources where id = any(${ids}::int[])`).map((r) => r.id));
    const missing = ids.filter((id) => !known.has(id));
    if (missing.length > 0) throw new UsageError(`--source: no source with ID ${missing.join(', ')} (see: sources list)`);
  }
  const deps = ctx.deps();
  await reconcile(deps);
  const workers = o.wait ? startWorkers(deps, { roles: ['poller', 'sink'], connection: ctx.redis() }) : undefined;
  const startedAt = Date.now();
  const tty = process.stderr.isTTY === true;
  let lastPrinted = 0;
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
        if (!o.wait || batches.length === 0) return;
        const line = progressLine(batches, startedAt);
        if (tty) process.stderr.write(`\r${line}\x1b[K`);
        else if (Date.now() - lastPrinted >= 1000) {
          process.stderr.write(`${line}\n`);
          lastPrinted = Date.now();
        }
      },
    });
    if (tty && o.wait) process.stderr.write('\n');
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

