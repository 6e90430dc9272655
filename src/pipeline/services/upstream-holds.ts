/**
 * Upstream holds as one process sees them: recording one for its key, reading those that apply
 * to its key, lifting them, and re-checking them. A daemon asks `/me` (free) when it starts,
 * holds or not, so a refused key is logged and held at once rather than at its first cron, and
 * then every HOLD_RECHECK_MS while a hold stands, lifting by itself the holds that answer can
 * judge: an answer at all means the key works again (`unauthorized`); credits left above the
 * reserve mean the quota came back, usually a billing renewal (`credits`). A plan without batches
 * (`upgrade-required`) does not show in `/me`: it waits for a person's sync, and the daemon says
 * so once.
 *
 * Every hold is about one key (its fingerprint, src/api/key-fingerprint.ts): the process reads,
 * records and lifts the holds of `api.keyFingerprint` (and those older than per-key holds, which
 * apply to every key), never another key's.
 */
import type { Account } from '../../api/schemas.ts';
import { ApiError, ForbiddenError, GatewayForbiddenError, UnauthorizedError } from '../../api/errors.ts';
import { insertCreditSnapshot } from '../../db/credit-snapshots.ts';
import {
  clearHolds,
  describeHold,
  describeHoldKey,
  holdsForKey,
  LIFTED_BY_SYNC,
  setHold,
  type UpstreamHoldRow,
} from '../../db/upstream-holds.ts';
import { HOLD_CODES_JUDGED_BY_ME, type HoldCode } from '../../domain/refusals.ts';
import type { PipelineDeps } from '../deps.ts';

type HoldDeps = Pick<PipelineDeps, 'sql' | 'api' | 'log'>;

/**
 * Whether an error of `GET /me` says the key itself is refused: a 401, or a 403 with any body
 * (`/me` names no video, so its 403 cannot mean a restricted one).
 */
export function meRefusesKey(e: unknown): boolean {
  return e instanceof UnauthorizedError || e instanceof ForbiddenError || e instanceof GatewayForbiddenError;
}

/**
 * A 403 that is not the API's own answer (GatewayForbiddenError: a gateway's page, say for a bad
 * key) is judged by a free `GET /me` before anything is marked forbidden or held: `/me` refused
 * too (meRefusesKey) means the key is bad, and an UnauthorizedError is returned for the callers'
 * hold-by-key path; `/me` answered, or failed otherwise, means a passing upstream fault, and the
 * error is returned as it is (retryable: no refusal code takes it). Any other error is returned
 * unchanged, without asking.
 */
export async function judgeGatewayForbidden(
  deps: Pick<PipelineDeps, 'api' | 'log'>,
  e: unknown,
  signal?: AbortSignal,
): Promise<unknown> {
  if (!(e instanceof GatewayForbiddenError)) return e;
  let meError: unknown;
  try {
    await deps.api.me({ signal });
  } catch (err: unknown) {
    meError = err;
  }
  const keyRefused = meRefusesKey(meError);
  deps.log.warn(
    {
      event: 'hold.gateway_forbidden',
      endpoint: e.endpoint,
      keyRefused,
      meCode: meError instanceof ApiError ? meError.code : meError === undefined ? null : 'error',
    },
    keyRefused
      ? 'a 403 from a gateway, and /me refuses the key too: the key is refused'
      : 'a 403 from a gateway while /me answers: a passing upstream fault, nothing marked',
  );
  if (!keyRefused) return e;
  return new UnauthorizedError({
    message: `${e.message}; GET /me refused the key too (${(meError as ApiError).status ?? ''} ${(meError as ApiError).code}): the key is refused`,
    status: e.status,
    endpoint: e.endpoint,
    rawBody: e.rawBody,
    cause: e,
  });
}

/** The holds that apply to this process: those of its key (and any from before holds were per key). */
export async function holdsApplying(deps: Pick<PipelineDeps, 'sql' | 'api'>): Promise<UpstreamHoldRow[]> {
  return holdsForKey(deps.sql, deps.api.keyFingerprint);
}

/**
 * Record a refusal of this process's key as a hold; a new one is logged (error, once per hold),
 * with `fields` for context (`jobId`, `sourceId`). Returns true when the hold is new.
 */
export async function recordHold(
  deps: HoldDeps,
  code: HoldCode,
  reason: string,
  fields: Record<string, unknown> = {},
): Promise<boolean> {
  const key = deps.api.keyFingerprint;
  const isNew = await setHold(deps.sql, key, code, reason);
  if (isNew)
    deps.log.error(
      { event: 'hold.set', code, reason, keyFingerprint: key, ...fields },
      describeHold({ code, reason, since: new Date(), keyFingerprint: key }),
    );
  return isNew;
}

/** A sync a person started got through with this key: its holds lift (another key's stay). */
export async function liftHolds(deps: HoldDeps, reason: string = LIFTED_BY_SYNC): Promise<HoldCode[]> {
  const cleared = await clearHolds(deps.sql, deps.api.keyFingerprint, undefined, reason);
  if (cleared.length > 0)
    deps.log.info(
      { event: 'hold.cleared', cleared, keyFingerprint: deps.api.keyFingerprint },
      'upstream hold cleared: scheduled syncs resume',
    );
  return cleared;
}

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
  /**
   * ask `/me` even when no hold it can judge stands, and log a refused key at error level:
   * the daemon's check at start
   */
  atStart?: boolean;
}

/**
 * One re-check: `/me` when a hold it can judge applies to this key (also one of scope `all`:
 * this call is how such a hold ends), or always at start; then lift what the answer allows. A
 * key `/me` refuses is held (or its hold refreshed). Returns the codes lifted.
 */
export async function recheckHolds(deps: RecheckDeps, opts: RecheckOptions = {}): Promise<HoldCode[]> {
  const { log } = deps;
  const holds = await holdsApplying(deps);
  reportUpgradeOnce(deps, holds, opts.memory ?? {});
  const judged = holds.filter((h) => HOLD_CODES_JUDGED_BY_ME.includes(h.code)).map((h) => h.code);
  if (judged.length === 0 && !opts.atStart) return [];

  let me: Account;
  try {
    me = await deps.api.me({ signal: opts.signal });
  } catch (e: unknown) {
    if (opts.signal?.aborted) return [];
    await onMeRefused(deps, e, judged, opts.atStart === true);
    return [];
  }
  await insertCreditSnapshot(deps.sql, me, opts.atStart ? 'daemon-start' : 'hold-recheck');
  if (judged.length === 0) return [];

  const left = me.maxCredits - me.usedCredits;
  const creditsBack = left > deps.settings.creditReserve;
  // only holds read before asking: a hold set while /me was in flight was set for a newer reason
  const lift = judged.filter((c) => c === 'unauthorized' || (c === 'credits' && creditsBack));
  const cleared =
    lift.length === 0
      ? []
      : await clearHolds(deps.sql, deps.api.keyFingerprint, lift, `recheck: /me answered, ${left} credits left`);
  const fields = {
    usedCredits: me.usedCredits,
    maxCredits: me.maxCredits,
    creditReserve: deps.settings.creditReserve,
    keyFingerprint: deps.api.keyFingerprint,
  };
  if (cleared.length > 0)
    log.info(
      { event: 'hold.recheck_cleared', cleared, ...fields },
      'upstream hold lifted by a re-check: scheduled syncs resume',
    );
  const standing = judged.filter((c) => !lift.includes(c));
  if (standing.length > 0)
    log.debug(
      { event: 'hold.recheck_standing', holds: standing, ...fields },
      'upstream hold stands: no credits above the reserve',
    );
  return cleared;
}

/** `/me` did not answer: a refused key is held; anything else leaves the holds as they are. */
async function onMeRefused(
  deps: RecheckDeps,
  e: unknown,
  judged: readonly HoldCode[],
  atStart: boolean,
): Promise<void> {
  const { log } = deps;
  const code = e instanceof ApiError ? e.code : 'error';
  const keyFingerprint = deps.api.keyFingerprint;
  if (e instanceof UnauthorizedError && atStart) {
    // one line that says it all (not `hold.set` too), whether the hold is new or stood already
    const isNew = await setHold(deps.sql, keyFingerprint, 'unauthorized', e.message);
    log.error(
      { event: 'daemon.api_key_refused', code, keyFingerprint, holdIsNew: isNew },
      `the upstream refuses this process's API key (${describeHoldKey(keyFingerprint)}): /me answered unauthorized; ` +
        'this daemon makes no API call until it works: set API_KEY to a valid key and restart it ' +
        '(it also re-checks /me every HOLD_RECHECK_MS and resumes by itself if the key is accepted again)',
    );
    return;
  }
  if (e instanceof UnauthorizedError) await recordHold(deps, 'unauthorized', e.message);
  if (atStart) {
    log.warn(
      { event: 'daemon.api_key_unchecked', code, keyFingerprint },
      'could not check the API key at start (/me did not answer); re-checked while a hold stands, and by every sync',
    );
    return;
  }
  log.warn({ event: 'hold.recheck_refused', code, holds: judged, keyFingerprint }, 'upstream hold stands: /me refused');
}

function reportUpgradeOnce(deps: RecheckDeps, holds: readonly UpstreamHoldRow[], memory: RecheckMemory): void {
  const upgrade = holds.find((h) => h.code === 'upgrade-required');
  if (!upgrade || memory.upgradeReportedSince === upgrade.since.getTime()) return;
  memory.upgradeReportedSince = upgrade.since.getTime();
  deps.log.warn(
    {
      event: 'hold.needs_person',
      code: upgrade.code,
      since: upgrade.since.toISOString(),
      keyFingerprint: upgrade.keyFingerprint,
      needsPerson: true,
    },
    'upstream hold needs a person: /me cannot tell whether the plan allows batches; upgrade it, then run videosite-ingest backfill --all',
  );
}

export interface HoldRecheckLoop {
  /** One re-check now, or the one already running; errors are logged, never thrown. */
  run(): Promise<HoldCode[]>;
  /**
   * The daemon's check at start: `/me` whether or not a hold stands, so that a refused key is
   * logged (error, `daemon.api_key_refused`) and held at once, not at the first cron hours later
   * (or the re-check already running).
   */
  checkAtStart(): Promise<HoldCode[]>;
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

  const run = (atStart = false): Promise<HoldCode[]> => {
    running ??= recheckHolds(deps, { signal: abort.signal, memory, atStart })
      .catch((err: unknown) => {
        if (!abort.signal.aborted)
          deps.log.warn(
            { event: 'hold.recheck_failed', err },
            'upstream hold re-check failed; retrying at the next interval',
          );
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
    run: () => run(),
    checkAtStart: () => run(true),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      abort.abort();
      await running;
    },
  };
}
