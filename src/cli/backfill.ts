/**
 * `backfill`: sync sources now and wait until every row has landed. It runs its own poller and
 * sink workers (daemons, if any, share the work through the same queues), shows progress on
 * stderr, prints a summary on stdout, and exits 0 only if everything landed.
 */
import { isPageSourceKind } from '../domain/pages.ts';
import { InvalidArgumentError, type Command } from 'commander';
import { batchProgress } from '../db/batch-progress.ts';
import type { EmbeddingsConfig } from '../config.ts';
import type { Sql } from '../db/connection.ts';
import { STORE_HINTS } from '../db/embeddings.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { allSourceIds, existingSourceIds } from '../db/sources.ts';
import { planBackfill, runBackfill, type BackfillPlan, type BackfillReport } from '../pipeline/commands/backfill.ts';
import { drainEmbeddings, type EmbedDrainResult } from '../pipeline/services/embedder.ts';
import { reconcile } from '../pipeline/services/reconcile.ts';
import { startWorkers } from '../pipeline/services/workers.ts';
import { intArg, parseDurationMs } from './args.ts';
import { createContext, type Context } from './context.ts';
import { UsageError } from './exit.ts';
import { assertBackfillPool } from './pool-check.ts';
import { createProgressView, drainSearchIndexShowingProgress } from './progress.ts';
import { waitForRedis } from './redis-ready.ts';
import { renderTable } from './table.ts';
import { terminalSafe } from '../terminal-text.ts';
import { shellCommand } from '../shell-quote.ts';

/**
 * The passages left without a vector embedded before the command returns, and one line on stderr
 * saying how many, or why it stopped (the budget, pgvector missing, the provider failing): the
 * rows landed either way, so the exit status does not change; the daemons' embedders go on.
 */
async function drainEmbeddingsSaying(
  sql: Sql,
  ctx: Context,
  embeddings: EmbeddingsConfig,
  signal: AbortSignal,
): Promise<void> {
  const r = await drainEmbeddings({ sql, log: ctx.log, embeddings }, { signal });
  const why: Record<EmbedDrainResult['stopped'], string | undefined> = {
    done: undefined,
    refused: 'EMBEDDINGS_TOKENS_PER_DAY is spent for today',
    failing: 'the embeddings provider keeps failing (a daemon tries again)',
    'not-installed': STORE_HINTS['not-installed'],
    'not-permitted': STORE_HINTS['not-permitted'],
    ready: undefined,
  };
  const reason = why[r.stopped];
  process.stderr.write(
    `embeddings: ${r.embedded} passage text(s) embedded${reason === undefined ? '' : `; stopped: ${reason}`}\n`,
  );
}

/** Quarantined batches the summary names a `replay --quarantined --batch` command for; past these, one command for all. */
export const QUARANTINE_HINTS_SHOWN = 5;

/** How to re-sink what a backfill quarantined, each batch's job ID quoted for a shell. */
function quarantineHints(batches: BackfillReport['batches']): string[] {
  const quarantined = batches.filter((b) => b.quarantined > 0);
  if (quarantined.length === 0) return [];
  const out = [
    '  after an upgrade that reads them, re-sink the quarantined items from their raw copy (free; --dry-run first shows what would happen):\n',
  ];
  for (const b of quarantined.slice(0, QUARANTINE_HINTS_SHOWN)) {
    out.push(`    ${shellCommand('videosite-ingest', 'replay', '--quarantined', '--batch', b.jobId, '--dry-run')}\n`);
  }
  if (quarantined.length > QUARANTINE_HINTS_SHOWN) {
    out.push(
      `    and ${quarantined.length - QUARANTINE_HINTS_SHOWN} more batches, all at once: ${shellCommand('videosite-ingest', 'replay', '--quarantined', '--dry-run')}\n`,
    );
  }
  return out;
}

export interface BackfillCommandOptions {
  source?: number[];
  all: boolean;
  wait: boolean;
  timeout?: number;
  /** plan only (`--dry-run`): print, spend nothing */
  dryRun?: boolean;
  /** fetch every stored (or gone) video of the sources again */
  refresh?: boolean;
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

/** The summary for a person; sync errors, titles and job IDs come from the upstream, so the whole text goes through `terminalSafe`. */
export function renderBackfillReport(r: BackfillReport): string {
  const out: string[] = [];
  for (const s of r.syncs) {
    out.push(
      `source ${s.sourceId}: ${s.outcome}` +
        (s.listed ? `, ${s.listed} listed` : '') +
        (s.listingCredits ? ` (listing: ${s.listingCredits} credit${s.listingCredits === 1 ? '' : 's'})` : '') +
        (s.jobIds.length
          ? s.kind !== undefined && isPageSourceKind(s.kind)
            ? `, ${s.kind === 'website' ? 'a crawl' : `${s.submitted} page(s) read`}, ~${s.creditsEstimated} credits`
            : s.kind === 'media'
              ? `, ${s.submitted} media item(s) and video(s) bought in ${s.jobIds.length} job(s), ~${s.creditsEstimated} credits`
              : `, ${s.submitted} video(s) submitted in ${s.jobIds.length} batch(es), ~${s.creditsEstimated} credits`
          : '') +
        (s.translated ? `, ${plural(s.translated, 'translation')} stored` : '') +
        (s.creditsBilled !== undefined ? `; billed ${plural(s.creditsBilled, 'credit')}` : '') +
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
          b.jobId,
          b.sourceId,
          b.kind + (b.lang ? ` ${b.lang}` : ''),
          b.status + (b.errorCode ? ` (${b.errorCode})` : ''),
          b.total,
          b.sunk,
          b.failed,
          b.retryable,
          b.quarantined,
          Object.entries(b.errors)
            .map(([k, v]) => `${k}:${v}`)
            .join(' ') || '-',
        ]),
      ),
    );
  }
  if (r.credits?.billed != null && (r.syncs.length > 0 || r.credits.billed > 0)) {
    const { billed, used } = r.credits;
    out.push(
      `credits: ${billed} billed (x-billable-requests of every answer)` +
        (used === null
          ? ''
          : used === billed
            ? `, as /me says`
            : `; /me says ${used} used meanwhile (a difference of ${Math.abs(used - billed)}: another client of the key, or answers without the header)`) +
        '\n',
    );
  }
  if (r.problems.length > 0) {
    out.push(`not everything landed (exit ${r.exitCode}):\n`);
    for (const p of r.problems) out.push(`  - ${p}\n`);
    for (const l of quarantineHints(r.batches)) out.push(l);
  } else if (r.syncs.length === 0 && r.batches.length === 0) {
    // `--all` on an empty installation: "everything landed" would suggest data is there
    out.push('nothing to sync: no sources registered (add one: videosite-ingest sources add channel @handle)\n');
  } else if (!r.waited) {
    out.push('submitted; not waiting (--no-wait): a daemon lands the rows; see: videosite-ingest status\n');
  } else {
    out.push('everything landed\n');
  }
  return terminalSafe(out.join(''), { multiline: true });
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** `backfill --dry-run`: every batch and listing it would pay for, the total, and what cannot be known. */
export function renderBackfillPlan(plan: BackfillPlan): string {
  const out: string[] = [
    'dry run: nothing is submitted and no paid request is made (the one request is GET /me, which is free)\n',
  ];
  const rows: (string | number | null)[][] = [];
  let listings = 0;
  let purchases = 0;
  for (const s of plan.sources) {
    const id = s.source.id;
    if (s.listing.refresh > 0) rows.push([id, 'record', null, null, s.listing.refresh]);
    if (s.listing.listing > 0) {
      listings++;
      rows.push([
        id,
        s.listing.pages !== undefined ? `listing (${plural(s.listing.pages, 'page')})` : 'listing',
        null,
        null,
        s.listing.listing,
      ]);
    }
    for (const b of s.purchases) {
      purchases++;
      rows.push([id, b.kind, b.lang, b.videos, b.credits]);
    }
  }
  if (rows.length > 0) out.push(renderTable(['source', 'kind', 'lang', 'videos', 'credits'], rows));
  out.push(
    `total: ${plural(purchases, 'batch', 'batches')} and ${plural(listings, 'listing')}: ${plural(plan.credits, 'credit')}\n`,
  );
  for (const s of plan.sources) {
    const what = `source ${s.source.id} (${s.source.kind} ${s.source.title ?? s.source.externalId})`;
    const busy = s.inFlight.map((w) =>
      w.kind === 'video'
        ? 'metadata'
        : w.kind === 'page'
          ? 'its crawl'
          : w.kind === 'media'
            ? 'a media transcript job'
            : `transcript ${w.lang ?? '(default language)'}`,
    );
    if (busy.length > 0) out.push(`${what}: ${busy.join(', ')} still in flight: not submitted again until it ends\n`);
    else if (s.purchases.length === 0)
      out.push(
        `${what}: nothing due among the ${plural(s.known, isPageSourceKind(s.source.kind) ? 'page' : 'video')} Postgres knows it ${isPageSourceKind(s.source.kind) ? 'holds' : 'lists'}\n`,
      );
  }
  const unknowns = plan.sources.flatMap((s) => s.unknowns.map((u) => `  - source ${s.source.id}: ${u}\n`));
  if (unknowns.length > 0) out.push('not known without a paid listing (not in the total):\n', unknowns.join(''));
  else out.push('exact: nothing in this plan depends on a paid listing\n');
  const fits = (left: number, needed: number) =>
    needed <= left ? 'the plan fits' : `the plan needs ${needed}: syncs past ${left} would be refused`;
  if ('error' in plan.account) {
    out.push(`account: unknown (GET /me failed: ${plan.account.error})\n`);
  } else {
    const left = plan.account.left - plan.account.reserved;
    out.push(
      `account: ${plural(plan.account.left, 'credit')} left above the reserve, ${plan.account.reserved} reserved by syncs in progress: ${fits(left, plan.credits)}\n`,
    );
  }
  if (plan.budget) {
    const left = Math.max(0, plan.budget.budget - plan.budget.spent);
    out.push(
      `budget: CREDIT_BUDGET_PER_DAY ${plan.budget.budget}, ${plan.budget.spent} spent or reserved today (UTC), ${left} left: ${fits(left, plan.credits)}\n`,
    );
  }
  for (const s of plan.sources) {
    if (!s.budget) continue;
    const left = Math.max(0, s.budget.budget - s.budget.spent);
    const needed = s.listing.credits + s.purchases.reduce((n, b) => n + b.credits, 0);
    out.push(
      `budget of source ${s.source.id}: --max-credits-per-day ${s.budget.budget}, ${s.budget.spent} spent or reserved today (UTC), ${left} left: ${fits(left, needed)}\n`,
    );
  }
  return terminalSafe(out.join(''), { multiline: true });
}

/** The whole backfill, for the command and for `demo`. Returns the exit code. */
/** The sources a backfill names (`--source`, each checked to exist), or every one (`--all`). */
async function chosenSourceIds(ctx: Context, o: Pick<BackfillCommandOptions, 'all' | 'source'>): Promise<number[]> {
  const { sql } = ctx.db();
  if (o.all) return allSourceIds(sql);
  const ids = [...new Set(o.source ?? [])];
  const known = await existingSourceIds(sql, ids);
  const missing = ids.filter((id) => !known.has(id));
  if (missing.length > 0) throw new UsageError(`--source: no source with ID ${missing.join(', ')} (see: sources list)`);
  return ids;
}

export async function backfillWithContext(
  ctx: Context,
  o: BackfillCommandOptions,
): Promise<{ report: BackfillReport; exitCode: number }> {
  const { sql } = ctx.db();
  const ids = await chosenSourceIds(ctx, o);
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
  // --timeout bounds the whole run, syncs too (a listing that trickles, a /me that hangs), not
  // only the wait for the batches
  let deadlinePassed = false;
  const deadline =
    o.timeout === undefined
      ? undefined
      : setTimeout(() => {
          deadlinePassed = true;
          abort.abort();
        }, o.timeout);
  try {
    const report = await runBackfill(deps, {
      sourceIds: ids,
      wait: o.wait,
      timeoutMs: o.timeout,
      signal: abort.signal,
      refresh: o.refresh,
      onProgress: (batches) => {
        if (o.wait) progress.update(batches);
      },
    });
    if (deadlinePassed && !report.timedOut) {
      report.timedOut = true;
      report.problems.push(
        `timed out (--timeout ${o.timeout} ms) before the syncs ended: what was submitted goes on upstream; a daemon or the next backfill picks it up`,
      );
      report.exitCode = report.exitCode === 0 ? 1 : report.exitCode;
    } else if (abort.signal.aborted && !deadlinePassed) {
      report.problems.push('interrupted: the batches go on upstream; a daemon or the next backfill picks them up');
      report.exitCode = report.exitCode === 0 ? 1 : report.exitCode;
    }
    if (!o.wait)
      report.batches = await batchProgress(
        sql,
        report.syncs.flatMap((s) => s.jobIds),
      );
    // what it stored is searchable when it returns (no daemon need run)
    else if (!abort.signal.aborted) {
      await drainSearchIndexShowingProgress(
        { sql, passages: ctx.config.pipeline.passages },
        process.stderr,
        abort.signal,
      );
      // and found by meaning: the passages it cut embedded (when EMBEDDINGS_* is set)
      if (ctx.config.embeddings !== undefined && !abort.signal.aborted)
        await drainEmbeddingsSaying(sql, ctx, ctx.config.embeddings, abort.signal);
    }
    return { report, exitCode: report.exitCode };
  } finally {
    if (deadline !== undefined) clearTimeout(deadline);
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
    .option(
      '--dry-run',
      'print every batch and listing it would pay for, and the credits, without spending any; exit 0',
      false,
    )
    .option(
      '--refresh',
      'fetch every stored (or gone) video of the sources again now, metadata and each wanted transcript language, at the price of a first fetch: edits upstream become changes and events (see: events)',
      false,
    )
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
        '2 usage or configuration error; 3 refused: by the upstream (auth, plan, credits) or by a daily\n' +
        'credit budget (CREDIT_BUDGET_PER_DAY, --max-credits-per-day). With --dry-run: 0, or 2.',
    )
    .action(async (o: BackfillCommandOptions) => {
      if (o.all === (o.source !== undefined && o.source.length > 0)) {
        throw new UsageError('give either --source ID (one or more) or --all');
      }
      const ctx = createContext();
      try {
        // before connecting: a pool its syncs and workers could exhaust is a configuration error
        assertBackfillPool(ctx.config, { wait: o.wait });
        await migrateDatabase(ctx.config.databaseUrl, ctx.log, ctx.config.migration);
        if (o.dryRun) {
          const { sql } = ctx.db();
          const plan = await planBackfill(
            { sql, api: ctx.api(), settings: ctx.config.pipeline },
            await chosenSourceIds(ctx, o),
            { refresh: o.refresh },
          );
          process.stdout.write(renderBackfillPlan(plan));
          return;
        }
        const { report, exitCode } = await backfillWithContext(ctx, o);
        process.stdout.write(renderBackfillReport(report));
        process.exitCode = exitCode;
      } finally {
        await ctx.close();
      }
    });
}
