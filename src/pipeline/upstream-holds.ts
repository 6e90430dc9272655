/**
 * Re-checking upstream holds. A daemon asks `/me` (free) when it starts and every
 * HOLD_RECHECK_MS after, and lifts by itself the holds that answer can judge: an answer at all
 * means the key works again (`unauthorized`); credits left above the reserve mean the quota came
 * back, usually a billing renewal (`credits`). A plan without batches (`upgrade-required`) does
 * not show in `/me`: it waits for a person's sync, and the daemon says so once.
 */
import type { Account } from '../api/schemas.ts';
import { ApiError } from '../api/errors.ts';
import { insertCreditSnapshot } from '../db/credit-snapshots.ts';
import { activeHolds, clearHolds, type UpstreamHoldRow } from '../db/upstream-holds.ts';
import { HOLD_CODES_JUDGED_BY_ME, type HoldCode } from '../domain/refusals.ts';
import type { PipelineDeps } from './deps.ts';

export type RecheckDeps = Pick<PipelineDeps, 'sql' | 'api' | 'log' | 'settings'>;

/** What a daemon's re-checks remember between runs. */
export interface RecheckMemory {
  /** `since` (epoch ms) of the `upgrade-required` hold already reported, so it is logged once */
  upgradeReportedSince?: number;
}

export interface RecheckOptions {
  /** aborts a `/me` in flight (shutdown) */
  signal?: AbortSignal | undefined;
  memory?: RecheckMemory;
}

/**
 * One re-check: `/me` when a hold it can judge stands (also one of scope `all`: this call is how
 * such a hold ends), then lift what the answer allows. Returns the codes lifted.
 */
export async function recheckHolds(deps: RecheckDeps, opts: RecheckOptions = {}): Promise<HoldCode[]> {
  const { log } = deps;
  const holds = await activeHolds(deps.sql);
  reportUpgradeOnce(deps, holds, opts.memory ?? {});
  const judged = holds.filter((h) => HOLD_CODES_JUDGED_BY_ME.includes(h.code)).map((h) => h.code);
  if (judged.length === 0) return [];

  let me: Account;
  try {
    me = await deps.api.me({ signal: opts.signal });
  } catch (e: unknown) {
    if (opts.signal?.aborted) return [];
    log.warn({ event: 'hold.recheck_refused', code: e instanceof ApiError ? e.code : 'error', holds: judged }, 'upstream hold stands: /me refused');
    return [];
  }
  await insertCreditSnapshot(deps.sql, me, 'hold-recheck');

  const left = me.maxCredits - me.usedCredits;
  const creditsBack = left > deps.settings.creditReserve;
  // only holds read before asking: a hold set while /me was in flight was set for a newer reason
  const lift = judged.filter((c) => c === 'unauthorized' || (c === 'credits' && creditsBack));
  const cleared = lift.length === 0 ? [] : await clearHolds(deps.sql, lift, `recheck: /me answered, ${left} credits left`);
  const fields = { usedCredits: me.usedCredits, maxCredits: me.maxCredits, creditReserve: deps.settings.creditReserve };
  if (cleared.length > 0) log.info({ event: 'hold.recheck_cleared', cleared, ...fields }, 'upstream hold lifted by a re-check: scheduled syncs resume');
  const standing = judged.filter((c) => !lift.includes(c));
  if (standing.length > 0) log.debug({ event: 'hold.recheck_standing', holds: standing, ...fields }, 'upstream hold stands: no credits above the reserve');
  return cleared;
}

function reportUpgradeOnce(deps: RecheckDeps, holds: readonly UpstreamHoldRow[], memory: RecheckMemory): void {
  const upgrade = holds.find((h) => h.code === 'upgrade-required');
  if (!upgrade || memory.upgradeReportedSince === upgrade.since.getTime()) return;
  memory.upgradeReportedSince = upgrade.since.getTime();
  deps.log.warn(
    { event: 'hold.needs_person', code: upgrade.code, since: upgrade.since.toISOString(), needsPerson: true },
    'upstream hold needs a person: /me cannot tell whether the plan allows batches; upgrade it, then run videosite-ingest backfill --all',
  );
}

export interface HoldRecheckLoop {
  /** One re-check now, or the one already running; errors are logged, never thrown. */
  run(): Promise<HoldCode[]>;
  /** Stop the timer, abort a `/me` in flight, and wait for the running re-check to end. */
  stop(): Promise<void>;
}

/**
 * Re-check every `intervalMs` (the next one is timed from the end of the last, so runs never
 * overlap); the timer does not keep the process alive.
 */
export function startHoldRecheck(deps: RecheckDeps, opts: { intervalMs: number }): HoldRecheckLoop {
  const memory: RecheckMemory = {};
  const abort = new AbortController();
  let running: Promise<HoldCode[]> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const run = (): Promise<HoldCode[]> => {
    running ??= recheckHolds(deps, { signal: abort.signal, memory })
      .catch((err: unknown) => {
        if (!abort.signal.aborted) deps.log.warn({ event: 'hold.recheck_failed', err }, 'upstream hold re-check failed; retrying at the next interval');
        return [];
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const scheduleNext = (): void => {
    if (stopped) return;
    timer = setTimeout(() => void run().then(scheduleNext), opts.intervalMs);
    timer.unref();
  };
  scheduleNext();

  return {
    run,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      abort.abort();
      await running;
    },
  };
}
