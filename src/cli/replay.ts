/**
 * `replay`: re-sink a batch from its stored raw items (free), re-sink quarantined items from their
 * raw copy (free), or re-submit retryable items as new batches (costs credits: prints the
 * estimate and asks for --yes).
 */
import type { Command } from 'commander';
import type { PipelineDeps } from '../pipeline/deps.ts';
import { reconcile } from '../pipeline/services/reconcile.ts';
import {
  planLostResubmission,
  planLostTranslations,
  planMediaRetry,
  releaseMediaRetry,
  type MediaRetryPlan,
  planResubmission,
  quarantineReplayLanded,
  releaseLost,
  resinkBatch,
  resinkQuarantined,
  resubmit,
  type QuarantineReplayReport,
  type ResubmitGroup,
} from '../pipeline/commands/replay.ts';
import { waitForBatches } from '../pipeline/commands/wait-for-batches.ts';
import { startWorkers } from '../pipeline/services/workers.ts';
import { INSTANT_FORMS, parseDurationMs, parseInstant } from './args.ts';
import { createContext, type Context } from './context.ts';
import { EXIT_NOT_LANDED, EXIT_USAGE, UsageError } from './exit.ts';
import { drainSearchIndexShowingProgress } from './progress.ts';
import { waitForRedis } from './redis-ready.ts';
import { renderTable, shortTime } from './table.ts';
import { quoteValue, terminalSafe } from '../terminal-text.ts';
import { shellCommand } from '../shell-quote.ts';

interface ReplayOptions {
  batch?: string;
  failed: boolean;
  expired: boolean;
  lost: boolean;
  quarantined: boolean;
  since?: Date;
  dryRun: boolean;
  yes: boolean;
  wait: boolean;
  timeout?: number;
}

const sinceArg = (value: string): Date => parseInstant(value).date;

function renderPlan(groups: ResubmitGroup[]): string {
  return renderTable(
    ['source', 'kind', 'videos', 'from batches', 'credits', 'note'],
    groups.map((g) => [
      g.sourceId,
      g.kind + (g.lang ? ` ${g.lang}` : ''),
      g.videoIds.length,
      g.fromJobIds.join(','),
      g.credits,
      g.blockedBy ? `waits: batch ${g.blockedBy} in flight` : '',
    ]),
  );
}

/** `(schema: 2, unstorable: 1)`, or '' when there is nothing to list. */
function counts(c: Record<string, number | undefined>): string {
  const parts = Object.entries(c)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([k, n]) => `${k}: ${n}`);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

/** The one summary line of `replay --quarantined` (also its dry run). */
export function quarantineSummary(r: QuarantineReplayReport): string {
  const o = r.outcomes;
  const rows = r.dryRun
    ? ''
    : ` (${r.rows.inserted} row(s) inserted, ${r.rows.updated} updated, ${r.rows.unchanged} unchanged)`;
  const outcome =
    `${o.stored} stored${rows}, ${o.failed} failed, ${o.retryable} retryable, ` +
    `${o.quarantined} still quarantined${counts(r.stillQuarantined)}, ${o.skipped} skipped${counts(r.skipped)}` +
    (r.pending > 0 ? `, ${r.pending} landed (another sink is storing them)` : '');
  return r.dryRun
    ? `dry run: would re-sink ${r.items} quarantined item(s) from raw${counts(r.byReason).replace(' (', ' (by reason: ')}: ${outcome}; nothing changed; no API call\n`
    : `re-sank ${r.items} quarantined item(s) from raw: ${outcome}; no API call\n`;
}

/** `replay --quarantined`: free, so no --yes; it does not wait for anything, so no --no-wait/--timeout. */
function checkQuarantinedOptions(o: ReplayOptions): void {
  const others = [o.failed && '--failed', o.expired && '--expired', o.lost && '--lost'].filter(
    (f): f is string => typeof f === 'string',
  );
  if (others.length > 0) {
    throw new UsageError(
      `--quarantined cannot be combined with ${others.join(', ')}: give one mode (--batch JOBID only narrows --quarantined to that batch)`,
    );
  }
  if (o.yes) throw new UsageError('--yes: replay --quarantined is free (no API call) and needs no consent');
  if (o.timeout !== undefined)
    throw new UsageError(
      `--timeout ${o.timeout} ms: replay --quarantined does not wait for anything (--timeout goes with --failed or --expired)`,
    );
  if (!o.wait)
    throw new UsageError(
      '--no-wait: replay --quarantined does not wait for anything (--no-wait goes with --failed or --expired)',
    );
}

export function registerReplayCommand(program: Command): void {
  program
    .command('replay')
    .description(
      're-sink a batch, or quarantined items, from stored raw items (free), or re-submit retryable items (costs credits)',
    )
    .option(
      '--batch <jobId>',
      're-run the database writes of this batch from its landed raw items; no API call (with --quarantined: only this batch)',
    )
    .option(
      '--failed',
      're-submit every retryable item (internal errors, lost results, unfinished at expiry); a media transcript past ' +
        "RETRY_ATTEMPTS_MAX is released for one purchase by its source's next sync",
      false,
    )
    .option('--expired', 're-submit the retryable items of expired batches only', false)
    .option(
      '--lost',
      're-submit what batch POSTs whose answer was lost (after a charge) would have fetched, and release each translation ' +
        'whose answer was lost or whose process died while sending (maybe billed) for one new purchase',
      false,
    )
    .option(
      '--quarantined',
      "re-sink quarantined items from their raw copy with today's rules (after an upgrade); no API call",
      false,
    )
    .option(
      '--since <date>',
      `only items of batches submitted since this time (with --failed/--expired/--quarantined): ${INSTANT_FORMS}`,
      sinceArg,
    )
    .option(
      '--dry-run',
      'print what would be re-submitted and its credit estimate (with --quarantined: what would happen); change nothing',
      false,
    )
    .option('--yes', 'agree to spend the estimated credits', false)
    .option('--no-wait', 'with --failed/--expired: return after submitting; daemons finish the work')
    .option('--timeout <duration>', 'stop waiting after this long (e.g. 15m)', parseDurationMs)
    .action(replay);
}

/** The replay command's action: one mode, chosen by the options, in a context closed at the end. */
async function replay(o: ReplayOptions): Promise<void> {
  checkReplayModes(o);
  const ctx = createContext();
  try {
    if (o.quarantined) return await replayQuarantined(ctx, o);
    if (o.batch !== undefined) return await replayBatch(ctx, o.batch);
    if (o.lost) return await replayLost(ctx, o);
    await replayRetryable(ctx, o);
  } finally {
    await ctx.close();
  }
}

/** Exactly one mode, and only the options that go with it. */
function checkReplayModes(o: ReplayOptions): void {
  if (o.quarantined) checkQuarantinedOptions(o);
  const modes = [o.batch !== undefined && !o.quarantined, o.failed, o.expired, o.lost, o.quarantined].filter(
    Boolean,
  ).length;
  if (modes !== 1)
    throw new UsageError('give exactly one of --batch JOBID, --failed, --expired, --lost, --quarantined');
  if (o.lost && o.since) throw new UsageError('--since goes with --failed or --expired');
  if (o.batch !== undefined && !o.quarantined && (o.since || o.dryRun || o.yes)) {
    throw new UsageError('--since, --dry-run and --yes go with --failed or --expired; --batch is free and needs none');
  }
}

/** `--quarantined`: re-sink quarantined items (or say what would happen with --dry-run). */
async function replayQuarantined(ctx: Context, o: ReplayOptions): Promise<void> {
  // the database only: no API client, no Redis (the sink runs in this process)
  const r = await resinkQuarantined(
    { sql: ctx.db().sql, log: ctx.log, settings: ctx.config.pipeline },
    { jobId: o.batch, since: o.since, dryRun: o.dryRun },
  );
  if (!r.found) throw new UsageError(`--batch: no batch ${quoteValue(o.batch ?? '')} is recorded (see: status)`);
  if (r.items === 0) {
    const scope = `${o.batch !== undefined ? ` in batch ${terminalSafe(o.batch)}` : ''}${o.since ? ` of batches submitted since ${o.since.toISOString()}` : ''}`;
    process.stdout.write(`nothing to re-sink: no quarantined items${scope}\n`);
    return;
  }
  if (o.dryRun) {
    process.stdout.write(
      renderTable(
        ['reason', 'would become', 'items'],
        r.transitions.map((t) => [t.reason, t.outcome, t.items]),
      ),
    );
  }
  if (!o.dryRun)
    await drainSearchIndexShowingProgress(
      { sql: ctx.db().sql, passages: ctx.config.pipeline.passages },
      process.stderr,
    );
  process.stdout.write(quarantineSummary(r));
  if (!o.dryRun && !quarantineReplayLanded(r)) process.exitCode = EXIT_NOT_LANDED;
}

/** `--batch JOBID`: re-run a batch's database writes from its raw items; refused when retention pruned some. */
async function replayBatch(ctx: Context, jobId: string): Promise<void> {
  const r = await resinkBatch({ sql: ctx.db().sql, log: ctx.log, settings: ctx.config.pipeline }, jobId);
  if (!r.found) throw new UsageError(`--batch: no batch ${quoteValue(jobId)} is recorded (see: status)`);
  if (r.pruned) {
    const p = r.pruned;
    const when =
      p.firstPrunedAt.getTime() === p.lastPrunedAt.getTime()
        ? `on ${shortTime(p.firstPrunedAt.toISOString())}`
        : `between ${shortTime(p.firstPrunedAt.toISOString())} and ${shortTime(p.lastPrunedAt.toISOString())}`;
    process.stderr.write(
      `error: batch ${terminalSafe(jobId)}: ${p.pruned} of its ${p.stored} stored item(s) have no raw copy left: retention ` +
        `(RAW_RETENTION_DAYS, now ${ctx.config.pipeline.rawRetentionDays}) pruned their payloads ${when}. ` +
        'replay --batch re-sinks from raw items only; nothing was changed, no API call\n',
    );
    process.exitCode = EXIT_NOT_LANDED;
    return;
  }
  await drainSearchIndexShowingProgress({ sql: ctx.db().sql, passages: ctx.config.pipeline.passages }, process.stderr);
  process.stdout.write(
    `batch ${terminalSafe(jobId)}: ${r.items} stored item(s) re-sunk from raw: ${r.inserted} row(s) inserted, ` +
      `${r.updated} updated, ${r.unchanged} unchanged${r.quarantined ? `, ${r.quarantined} quarantined` : ''}; no API call\n`,
  );
}

/** Whether the user agreed to spend credits (--yes); says what to do and sets the exit code when not. */
function agreedToSpend(o: ReplayOptions): boolean {
  if (o.yes) return true;
  process.stderr.write(
    'error: re-submitting spends credits; add --yes to proceed (or --dry-run to only see the plan)\n',
  );
  process.exitCode = EXIT_USAGE;
  return false;
}

/**
 * `--lost`: re-submit what batch POSTs whose answer was lost would have fetched, and release the
 * translations whose answer was lost (or whose process died while sending) for one new purchase.
 */
async function replayLost(ctx: Context, o: ReplayOptions): Promise<void> {
  const sql = ctx.db().sql;
  const lost = await planLostResubmission({ sql });
  const translations = await planLostTranslations({ sql });
  if (lost.length === 0 && translations.length === 0) {
    process.stdout.write(
      'nothing to re-submit: no batch POST answer was lost, and no translation is unknown or left sending\n',
    );
    return;
  }
  if (lost.length > 0) {
    process.stdout.write(
      renderTable(
        ['submission', 'source', 'kind', 'credits', 'lost at'],
        lost.map((l) => [
          l.id,
          l.sourceId,
          l.kind + (l.lang ? ` ${l.lang}` : ''),
          l.creditsEstimated,
          l.createdAt.toISOString(),
        ]),
      ),
    );
    process.stdout.write(
      `these batches were probably created (and paid) upstream, but their answers were lost; submitting them again costs about ` +
        `${lost.reduce((n, l) => n + l.creditsEstimated, 0)} credit(s) more\n`,
    );
  }
  if (translations.length > 0) {
    process.stdout.write(
      renderTable(
        ['translation', 'source', 'video', 'into', 'state', 'credits', 'since'],
        translations.map((t) => [
          t.id,
          t.sourceId ?? '-',
          terminalSafe(t.videoId),
          t.lang,
          t.state === 'sending' ? 'sending (its process died)' : 'unknown (answer lost)',
          t.creditsEstimated,
          t.at.toISOString(),
        ]),
      ),
    );
    process.stdout.write(
      `these translations may have been billed, but nothing was stored; buying them again costs at most ` +
        `${translations.reduce((n, t) => n + t.creditsEstimated, 0)} credit(s) more\n`,
    );
  }
  if (o.dryRun || !agreedToSpend(o)) return;
  await waitForRedis(ctx.redis());
  const syncs = await releaseLost(ctx.deps(), lost, translations);
  if (translations.length > 0)
    process.stdout.write(`released ${translations.length} translation(s) for one new purchase\n`);
  for (const r of syncs) {
    process.stdout.write(
      terminalSafe(
        `source ${r.sourceId}: ${r.outcome}${r.jobIds.length ? `, ${r.submitted} video(s) in ${r.jobIds.length} batch(es): ${r.jobIds.join(', ')}` : ''}`,
      ) + '\n',
    );
  }
}

/** `--failed` / `--expired`: plan, confirm, re-submit the retryable items and (unless --no-wait) wait for them. */
async function replayRetryable(ctx: Context, o: ReplayOptions): Promise<void> {
  const groups = await planResubmission(
    { sql: ctx.db().sql, settings: ctx.config.pipeline },
    { expiredOnly: o.expired, since: o.since },
  );
  const media = await planMediaRetry({ sql: ctx.db().sql, settings: ctx.config.pipeline }, { expiredOnly: o.expired });
  if (groups.length === 0 && media.length === 0) {
    process.stdout.write('nothing to re-submit: no retryable items\n');
    return;
  }
  if (groups.length === 0) return replayMediaRetry(ctx, o, media);
  if (media.length > 0) await replayMediaRetry(ctx, o, media);
  if (process.exitCode === EXIT_USAGE) return;
  const total = groups.filter((g) => g.blockedBy === null).reduce((n, g) => n + g.credits, 0);
  process.stdout.write(renderPlan(groups));
  process.stdout.write(`estimated cost: ${total} credit(s) (1 per batch + 1 per video)\n`);
  if (o.dryRun || !agreedToSpend(o)) return;
  if (total === 0) {
    process.stdout.write('every group waits for a batch still in flight; nothing submitted\n');
    return;
  }
  // before spending: the rate limiter and the new batches' poll jobs live in Redis
  await waitForRedis(ctx.redis());
  const deps = ctx.deps();
  const { jobIds, videos } = await resubmit(deps, groups);
  process.stdout.write(
    terminalSafe(`submitted ${videos} video(s) in ${jobIds.length} batch(es): ${jobIds.join(', ')}`) + '\n',
  );
  if (o.wait) await landResubmitted(ctx, deps, jobIds, o.timeout);
}

/**
 * `--failed` / `--expired` of media: the transcripts past RETRY_ATTEMPTS_MAX, listed with what
 * buying each once more costs; with --yes each is released for one purchase by its source's next
 * sync (a transcript job is polled by that sync, as any).
 */
async function replayMediaRetry(ctx: Context, o: ReplayOptions, media: MediaRetryPlan[]): Promise<void> {
  process.stdout.write(
    renderTable(
      ['media', 'platform', 'transcript', 'purchases', 'sources', 'credits'],
      media.map((m) => [terminalSafe(m.url), m.platform, m.state, m.attempts, m.sourceIds.join(','), m.credits]),
    ),
  );
  const total = media.reduce((n, m) => n + m.credits, 0);
  process.stdout.write(
    `these media transcripts failed to land as often as RETRY_ATTEMPTS_MAX (${ctx.config.pipeline.retryAttemptsMax}) allows; ` +
      `buying each once more costs about ${total} credit(s)\n`,
  );
  if (o.dryRun || !agreedToSpend(o)) return;
  const n = await releaseMediaRetry({ sql: ctx.db().sql, settings: ctx.config.pipeline }, media);
  const sources = [...new Set(media.map((m) => m.sourceIds[0]!))];
  process.stdout.write(
    `released ${n} media transcript(s) for one purchase each: the next sync of source(s) ${sources.join(', ')} buys them ` +
      `(now: ${sources.map((id) => shellCommand('videosite-ingest', 'backfill', '--source', id)).join('; ')})\n`,
  );
}

/** Run a poller and a sink here until the re-submitted batches finish (or the timeout), and report what landed. */
async function landResubmitted(
  ctx: Context,
  deps: PipelineDeps,
  jobIds: string[],
  timeoutMs: number | undefined,
): Promise<void> {
  const { sql } = ctx.db();
  await reconcile(deps);
  const workers = startWorkers(deps, { roles: ['poller', 'sink'], connection: ctx.redis() });
  try {
    const { batches, timedOut } = await waitForBatches(sql, jobIds, { timeoutMs });
    await drainSearchIndexShowingProgress({ sql, passages: ctx.config.pipeline.passages }, process.stderr);
    const stored = batches.reduce((n, b) => n + b.sunk, 0);
    const left = batches.reduce((n, b) => n + b.retryable + b.processing + b.quarantined, 0);
    const bad = batches.filter((b) => b.status !== 'completed');
    process.stdout.write(
      `replay: ${stored} item(s) stored, ${left} not landed${bad.length ? `, ${bad.length} batch(es) not completed` : ''}\n`,
    );
    if (left > 0 || bad.length > 0 || timedOut) process.exitCode = EXIT_NOT_LANDED;
  } finally {
    await workers.close();
  }
}
