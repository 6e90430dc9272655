/** `status [--json] [--all-sources]`: sources (those needing attention first), batches in flight with progress, error counts, credits, storage. */
import { isPageSourceKind } from '../domain/pages.ts';
import { keyFingerprint } from '../api/key-fingerprint.ts';
import { JOB_STATUSES } from '../api/enums.ts';
import type { Command } from 'commander';
import { compactBytes } from '../admin/chart.ts';
import type { BatchProgress } from '../db/batch-progress.ts';
import { PENDING_COUNT_CAP } from '../db/webhooks.ts';
import { describeCoverage } from '../domain/coverage.ts';
import type { EmbeddingsStatus, StatusReport } from '../pipeline/read/status.ts';
import { describePrune, STATUS_SOURCES_SHOWN } from '../pipeline/read/status-report.ts';
import { STORE_HINTS } from '../db/embeddings.ts';
import { terminalJson, terminalSafe } from '../terminal-text.ts';
import { renderTable, shortTime } from './table.ts';

/** Tables `status` lists under Storage unless asked for every one (`--storage`). */
export const STATUS_STORAGE_TABLES_SHOWN = 5;

function progress(b: BatchProgress): string {
  if (b.total === null || b.total === 0) return b.status === 'submitted' ? 'not polled yet' : '0/0';
  const pct = Math.floor((100 * b.finished) / b.total);
  return `${b.finished}/${b.total} (${pct}%)`;
}

/** What stops work, first: holds, a schema this build cannot schedule under, lost answers. */
function pushBanners(r: StatusReport, out: string[]): void {
  // first, because nothing scheduled happens while one stands
  for (const h of r.upstreamHolds ?? []) out.push(`ON HOLD: ${h.message}\n\n`);
  for (const h of r.otherKeyHolds ?? []) {
    out.push(
      `(another API key than the configured one, fingerprint ${h.keyFingerprint}, was refused: ${h.code}, last ${shortTime(h.lastSeenAt)}; ` +
        `nothing using the configured key is held. To forget it: videosite-ingest holds clear --key-fingerprint ${h.keyFingerprint})\n\n`,
    );
  }
  if (r.schema.reason !== null)
    out.push(`SCHEDULING STOPPED (daemons of this build, newest migration ${r.schema.built}): ${r.schema.reason}\n\n`);
  else if (r.schema.newer.length > 0) {
    out.push(
      `Schema newer than this build (${r.schema.built}), marked backward-compatible: ${r.schema.newer.map((m) => m.tag).join(', ')}\n\n`,
    );
  }
  for (const l of r.lostSubmissions ?? []) {
    out.push(
      `LOST ANSWER: source ${l.sourceId ?? '-'} ${l.kind}${l.lang ? ` ${l.lang}` : ''} (~${l.creditsEstimated} credits, ${shortTime(l.at)}): ` +
        'probably created upstream, not re-submitted; to re-submit: videosite-ingest replay --lost --yes\n\n',
    );
  }
}

/** The sources summary and the sources shown, those needing attention first. */
function pushSources(r: StatusReport, out: string[]): void {
  const n = r.sourcesSummary;
  if (n.total === 0) out.push('Sources\n  none (add one: videosite-ingest sources add channel @handle)\n');
  else {
    const needs =
      n.attention === 0
        ? 'none needs attention'
        : `${n.attention} need${n.attention === 1 ? 's' : ''} attention: ${n.withError} with an error, ${n.overdue} overdue, ${n.neverSynced} never synced`;
    out.push(
      `Sources: ${n.total} (${needs}; ${n.paused} paused); ` +
        (n.shown < n.total
          ? `showing ${n.shown}, the ones needing attention first; every source: videosite-ingest status --all-sources\n`
          : 'all shown, the ones needing attention first\n'),
    );
    // a pages column once a web source is shown
    const web = r.sources.some((s) => isPageSourceKind(s.kind));
    // a media column once a media source is shown
    const media = r.sources.some((s) => s.kind === 'media');
    out.push(
      renderTable(
        [
          'id',
          'kind',
          'title',
          'videos',
          'transcripts',
          ...(web ? ['pages'] : []),
          ...(media ? ['media'] : []),
          'last synced',
          'schedule',
          'last error',
        ],
        r.sources.map((s) => [
          s.id,
          s.kind,
          s.title ?? s.externalId,
          s.videos,
          s.transcripts,
          ...(web ? [s.pages] : []),
          ...(media ? [s.media] : []),
          shortTime(s.lastSyncedAt),
          s.paused ? 'paused' : (s.cron ?? 'backfill only'),
          s.lastError ? `${s.lastError} (${shortTime(s.lastErrorAt)})` : '-',
        ]),
      ),
    );
    // what the videos asked in a language got (the interface falls back to another one)
    const covered = r.sources.filter((s) => (s.coverage ?? []).length > 0);
    if (covered.length > 0) {
      out.push('Transcript languages per source (asked: came in it, fell back to another, none):\n');
      for (const s of covered) for (const c of s.coverage!) out.push(`  source ${s.id} ${describeCoverage(c)}\n`);
    }
    // what --translate bought, has yet to buy, and what its minute budget refused
    const translating = r.sources.filter((s) => s.translations !== undefined);
    if (translating.length > 0) {
      out.push('Translations per source (stored, due, refused by --max-translate-minutes):\n');
      for (const s of translating) {
        const t = s.translations!;
        out.push(
          `  source ${s.id} into ${t.langs.join(',') || '(none now)'}: ${t.stored} stored, ${t.backlog} due, ${t.refused} refused by the budget` +
            ` (${t.usedMinutes} of ${t.maxMinutes ?? '-'} min used)` +
            (t.unknown > 0
              ? `, ${t.unknown} unknown (answer lost or process died while sending: not asked again; replay --lost releases)`
              : '') +
            (t.failed > 0 ? `, ${t.failed} refused upstream` : '') +
            '\n',
        );
        for (const x of t.latestRefused)
          out.push(`    refused ${x.videoId} ${x.lang} (${x.minutes} min, ${shortTime(x.at)}): ${x.detail ?? ''}\n`);
      }
    }
  }
}

/** Batches in flight with their progress. */
function pushInFlight(r: StatusReport, out: string[]): void {
  out.push(`\nBatches in flight: ${r.inFlight.length}\n`);
  if (r.inFlight.length > 0)
    out.push(
      renderTable(
        ['job', 'source', 'kind', 'status', 'progress', 'landed', 'failed', 'polls', 'submitted', 'note'],
        r.inFlight.map((b) => [
          b.jobId,
          b.sourceId,
          b.kind + (b.lang ? ` ${b.lang}` : ''),
          // a status this interface version does not list shows as received
          b.upstreamStatus !== null && !(JOB_STATUSES as readonly string[]).includes(b.upstreamStatus)
            ? `${b.status} (upstream: ${b.upstreamStatus})`
            : b.status,
          progress(b),
          b.landed + b.sunk,
          b.failed,
          b.polls,
          shortTime(b.submittedAt),
          b.reason,
        ]),
      ),
    );
}

/** Batches by status, and those of the last 24 h that need attention (the latest first). */
function pushBatches(r: StatusReport, out: string[]): void {
  const byStatus = Object.entries(r.batchesByStatus)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  out.push(`\nBatches, all time: ${byStatus || 'none'}\n`);
  out.push(
    `Batches ended in the last 24 h: ${r.recentTotal}` +
      (r.recentTotal > r.recent.length
        ? ` (the latest ${r.recent.length} read here; every batch: the admin page /batches)\n`
        : '\n'),
  );
  // a batch whose retryable items a later one took up needs nothing more
  const bad = r.recent.filter((b) => b.status !== 'completed' || b.retryablePending > 0 || b.quarantined > 0);
  if (bad.length > 0) {
    out.push('Batches of the last 24 h that need attention:\n');
    out.push(
      renderTable(
        ['job', 'source', 'kind', 'status', 'error', 'retryable (to re-submit)', 'quarantined', 'reason'],
        bad.map((b) => [
          b.jobId,
          b.sourceId,
          b.kind + (b.lang ? ` ${b.lang}` : ''),
          b.status,
          b.errorCode,
          b.retryablePending === b.retryable ? b.retryable : `${b.retryable} (${b.retryablePending})`,
          b.quarantined,
          b.reason,
        ]),
      ),
    );
  }
}

/** What the videos got: latest outcomes, error codes, languages, history, gone and quarantined. */
function pushItems(r: StatusReport, out: string[]): void {
  const it = r.items;
  const p = r.pages;
  if (p !== undefined && p.stored > 0) {
    out.push(
      `\nWeb pages: ${p.stored} stored (${p.gone} gone: no source finds them any more), ${p.versions} versions\n`,
    );
  }
  const m = r.media;
  if (m !== undefined && m.stored > 0) {
    out.push(
      `\nMedia: ${m.stored} stored, transcripts: ${m.transcripts} stored, ${m.empty} empty (no speech), ` +
        `${m.pending} in flight, ${m.failed} without one (failed, expired or over budget)\n`,
    );
  }
  out.push(
    `\nVideos by latest outcome (per kind and language, as things stand): ${it.sunk} stored, ${it.landed} landed (not yet stored), ` +
      `${it.processing} in flight, ${it.failed} failed, ${it.retryable} retryable, ${it.quarantined} quarantined\n`,
  );
  if (r.outcomes.length > 0) {
    out.push(
      renderTable(
        ['kind', 'lang', 'stored', 'landed', 'in flight', 'failed', 'retryable', 'quarantined'],
        r.outcomes.map((o) => [
          o.kind,
          o.lang || '-',
          o.sunk,
          o.landed,
          o.processing,
          o.failed,
          o.retryable,
          o.quarantined,
        ]),
      ),
    );
  }
  if (r.itemErrors.length > 0) {
    out.push('Latest error codes:\n');
    out.push(
      renderTable(
        ['kind', 'lang', 'error code', 'state', 'videos'],
        r.itemErrors.map((e) => [e.kind, e.lang || '-', e.errorCode, e.state, e.items]),
      ),
    );
  }
  if (it.retryable > 0) out.push('  re-submit retryable items: videosite-ingest replay --failed --dry-run\n');
  if (r.languageCoverage.length > 0) {
    out.push('Transcript languages (asked: came in it, fell back to another, none):\n');
    for (const c of r.languageCoverage) out.push(`  ${describeCoverage(c)}\n`);
  }
  const h = r.history.items;
  out.push(
    `Items received, all time: ${h.sunk + h.landed + h.processing + h.failed + h.retryable + h.quarantined} ` +
      `(${h.sunk} stored, ${h.failed} failed, ${h.retryable} retryable, ${h.quarantined} quarantined; by code: status --json .history)\n`,
  );
  if (r.gone.total > 0) {
    const reasons = Object.entries(r.gone.byReason)
      .map(([reason, n]) => `${reason} ${n}`)
      .join(', ');
    out.push(
      `Videos gone upstream (rows kept; a refresh sees them come back): ${r.gone.total} (${reasons}); videosite-ingest events --type video.gone\n`,
    );
  }
  const q = r.quarantined;
  if (q.total > 0) {
    out.push(`\nQuarantined items (kept raw with the reason; never re-submitted automatically): ${q.total}\n`);
    for (const [reason, n] of Object.entries(q.byReason)) {
      if (n > 0)
        out.push(
          `  ${reason}: ${n} (after an upgrade that reads them: videosite-ingest replay --quarantined --dry-run)\n`,
        );
    }
  }
}

/** The latest hold events. */
function pushHoldEvents(r: StatusReport, out: string[]): void {
  const holdEvents = r.holdEvents ?? [];
  if (holdEvents.length > 0) {
    out.push('\nUpstream holds, latest events\n');
    out.push(
      renderTable(
        ['at', 'hold', 'event', 'reason'],
        holdEvents.map((e) => [shortTime(e.at), e.code, e.event, e.reason ?? '-']),
      ),
    );
  }
}

/** Credits: the latest /me, the daily rate, what was billed. */
function pushCredits(r: StatusReport, out: string[]): void {
  const c = r.credits;
  out.push('\nCredits\n');
  if (c.takenAt === null) out.push('  no /me snapshot yet\n');
  else
    out.push(
      `  plan ${c.plan}: ${c.usedCredits} of ${c.maxCredits} used, ${c.remaining} left (as of ${shortTime(c.takenAt)})` +
        `${c.usedLast24h !== null ? `; ${c.usedLast24h} in the last 24 h` : ''}\n` +
        `  estimated cost of all recorded batches: ${c.estimatedAllTime}\n`,
    );
  if (c.billedLast24h !== null && c.usedLast24h !== null) {
    const diff = c.usedLast24h - c.billedLast24h;
    out.push(
      `  billed between the same /me readings: ${c.billedLast24h}` +
        (diff === 0
          ? ' (matches /me)\n'
          : ` (/me says ${c.usedLast24h}: ${Math.abs(diff)} ${diff > 0 ? 'more used than billed here: another client, or answers without x-billable-requests' : 'less used than billed here'})\n`),
    );
  }
  if (c.billedByDay.length === 0) out.push('  billed (x-billable-requests): nothing recorded yet\n');
  else {
    out.push(
      '  billed per UTC day (x-billable-requests of each answer; the published price where an answer had none):\n',
    );
    out.push(
      renderTable(
        ['day', 'billed', 'estimated', 'requests', 'priced, no header', 'unanswered, maybe'],
        c.billedByDay.map((d) => [d.day, d.credits, d.estimated, d.requests, d.priced, d.unanswered]),
      ),
    );
    if (c.billedTodayBySource.length > 0) {
      out.push('  billed today by source:\n');
      out.push(
        renderTable(
          ['source', 'billed', 'estimated', 'requests'],
          c.billedTodayBySource.map((b) => [b.sourceId ?? '(none)', b.credits, b.estimated, b.requests]),
        ),
      );
    }
  }
}

/** Webhook endpoints and their health. */
function pushWebhooks(r: StatusReport, out: string[]): void {
  const hooks = r.webhooks ?? [];
  if (hooks.length > 0) {
    const bad = hooks.filter((w) => w.state !== 'ok');
    out.push(
      `\nWebhooks: ${hooks.length} endpoint${hooks.length === 1 ? '' : 's'}, ${bad.length === 0 ? 'all delivering' : `${bad.length} not delivering`}\n`,
    );
    out.push(
      renderTable(
        ['id', 'url', 'state', 'pending', 'last delivered'],
        hooks.map((w) => [
          w.id,
          w.url,
          w.state === 'disabled'
            ? `DISABLED ${shortTime(w.disabledAt)}: ${w.disabledReason ?? 'no reason recorded'}`
            : w.state === 'failing'
              ? `failing since ${shortTime(w.failingSince)}, next attempt ${shortTime(w.nextAttemptAt)}`
              : 'ok',
          w.pending > PENDING_COUNT_CAP ? `>${PENDING_COUNT_CAP}` : w.pending,
          w.lastDeliveredAt ? shortTime(w.lastDeliveredAt) : 'never',
        ]),
      ),
    );
    if (hooks.some((w) => w.state === 'disabled'))
      out.push('  deliver to a disabled endpoint again: videosite-ingest webhooks enable ID\n');
  }
}

/** Storage, the search index and passages, and the latest prune. */
function pushStorage(r: StatusReport, out: string[], everyTable: boolean): void {
  const total = r.storage.reduce((n, t) => n + t.totalBytes, 0);
  const shown = everyTable ? r.storage : r.storage.slice(0, STATUS_STORAGE_TABLES_SHOWN);
  out.push(
    `\nStorage: ${compactBytes(total)} in ${r.storage.length} tables` +
      (everyTable ? '\n' : `; the largest ${shown.length} (every table: videosite-ingest status --storage)\n`),
  );
  if (shown.length > 0)
    out.push(
      renderTable(
        everyTable
          ? ['table', 'total', 'TOAST', 'indexes', 'rows (planner estimate)']
          : ['table', 'total', 'TOAST', 'indexes'],
        shown.map((t) => [
          t.table,
          compactBytes(t.totalBytes),
          compactBytes(t.toastBytes),
          compactBytes(t.indexBytes),
          ...(everyTable ? [t.rowsEstimate === null ? 'not analyzed yet' : Math.round(t.rowsEstimate)] : []),
        ]),
      ),
    );
  const index = r.searchIndex;
  out.push(
    index.pending === 0
      ? `  search index and passages: up to date; ${index.passages} passage(s)\n`
      : `  search index and passages: ${waitingToBeCut(index.pendingByKind)} waiting to be indexed and cut${index.oldestQueuedAt ? ` (oldest stored ${shortTime(index.oldestQueuedAt)})` : ''}; ${index.passages} passage(s); daemons with the poller or sink role index them (so does: videosite-ingest search)\n`,
  );
  out.push(`  ${describeEmbeddings(r.embeddings)}\n`);
  const p = r.lastPrune;
  out.push(
    p === null
      ? '  last prune: never (daemons prune daily; see what it would free: videosite-ingest prune --dry-run)\n'
      : `  last prune: ${shortTime(p.startedAt)}: ${describePrune(p, compactBytes)}\n`,
  );
}

/** Which model search by meaning uses: the configured one, a previous one while it re-embeds, or none yet (text). */
function describeSearchModel(e: Extract<EmbeddingsStatus, { state: 'ready' }>): string {
  if (!e.search.covers) return `search by meaning: partial until ${e.model} covers every passage (default mode text)`;
  if (e.search.model !== e.model)
    return `search by meaning uses ${e.search.model} until ${e.model} covers every passage`;
  return `search by meaning uses ${e.model}`;
}

/** The embeddings line: off, what to install, or the model's coverage, backlog and the day's tokens. */
/** "3 transcript(s), 1 page(s)": what waits for its passages, by kind. */
function waitingToBeCut(byKind: Record<string, number>): string {
  const noun: Record<string, string> = { transcript: 'transcript(s)', media: 'media item(s)', page: 'page(s)' };
  return Object.entries(byKind)
    .map(([kind, n]) => `${n} ${noun[kind] ?? `${kind}(s)`}`)
    .join(', ');
}

export function describeEmbeddings(e: EmbeddingsStatus): string {
  switch (e.state) {
    case 'off':
      return 'embeddings: off (set EMBEDDINGS_BASE_URL to search by meaning)';
    case 'not-installed':
      return `embeddings: unavailable: ${STORE_HINTS['not-installed']}`;
    case 'not-created':
      return 'embeddings: pgvector is installed but not created in this database (the first embedder creates it: a daemon with EMBEDDINGS_BASE_URL, as a superuser)';
    case 'ready': {
      const budget = e.tokensPerDay === null ? '' : ` / ${e.tokensPerDay} budget`;
      const refused =
        e.refusedToday > 0 ? `; REFUSED ${e.refusedToday} request(s) today: the daily token budget is spent` : '';
      const failed = e.failed > 0 ? `; ${e.failed} text(s) refused by the provider (asked again tomorrow)` : '';
      const others = e.models.filter((m) => m.model !== e.model);
      const kept =
        others.length > 0 ? `; vectors kept of ${others.map((m) => `${m.model} (${m.texts})`).join(', ')}` : '';
      return (
        `embeddings: ${e.model}: ${e.covered}/${e.passages} passage(s) covered, ${e.backlog} text(s) waiting; ` +
        `tokens today ${e.tokensToday}${budget}${refused}${failed}${kept}; ${describeSearchModel(e)}`
      );
    }
  }
}

export interface RenderStatusOptions {
  /** every table's storage instead of the total and the largest few; default false */
  storage?: boolean;
}

/** The report for a person; titles, errors and hold reasons come from the upstream, so the whole text goes through `terminalSafe`. */
export function renderStatus(r: StatusReport, opts: RenderStatusOptions = {}): string {
  const out: string[] = [];
  pushBanners(r, out);
  pushSources(r, out);
  pushInFlight(r, out);
  pushBatches(r, out);
  pushItems(r, out);
  pushHoldEvents(r, out);
  pushCredits(r, out);
  pushWebhooks(r, out);
  pushStorage(r, out, opts.storage ?? false);
  return terminalSafe(out.join(''), { multiline: true });
}

export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('show sources, batches in flight with progress, error counts, credits and storage')
    .option('--json', 'print the report as JSON (stable field names) instead of tables', false)
    .option(
      '--all-sources',
      `list every source, not only the first ${STATUS_SOURCES_SHOWN} (those needing attention first)`,
      false,
    )
    .option(
      '--storage',
      `list every table's storage, not only the total and the ${STATUS_STORAGE_TABLES_SHOWN} largest (--json always has every table)`,
      false,
    )
    .action(async (o: { json: boolean; allSources: boolean; storage: boolean }) => {
      // here, not at the top: `status --help` needs neither the configuration nor the queries
      const [{ createDbContext }, { collectStatus }] = await Promise.all([
        import('./db-context.ts'),
        import('../pipeline/read/status.ts'),
      ]);
      const ctx = createDbContext();
      try {
        const apiKey = ctx.config.api.apiKey;
        const report = await collectStatus(ctx.db().sql, {
          allSources: o.allSources,
          // without a key this command cannot tell whose holds matter: every hold is shown
          keyFingerprint: apiKey === undefined ? undefined : keyFingerprint(apiKey),
          embeddings: ctx.config.embeddings,
        });
        process.stdout.write(o.json ? `${terminalJson(report, 2)}\n` : renderStatus(report, { storage: o.storage }));
      } finally {
        await ctx.close();
      }
    });
}
