/**
 * Re-checking upstream holds when a daemon starts: it may have been restarted with a fixed key,
 * or credits may have been added. `/me` is free and tells both; a plan without batches
 * (`upgrade-required`) cannot be judged there and waits for a person's backfill.
 */
import { ApiError } from '../api/errors.ts';
import { activeHolds, clearHolds } from '../db/upstream-holds.ts';
import type { HoldCode } from '../db/schema.ts';
import type { PipelineDeps } from './deps.ts';

export async function recheckHolds(deps: Pick<PipelineDeps, 'sql' | 'api' | 'log' | 'settings'>): Promise<HoldCode[]> {
  const holds = await activeHolds(deps.sql);
  if (!holds.some((h) => h.code === 'unauthorized' || h.code === 'credits')) return [];
  let me;
  try {
    me = await deps.api.me();
  } catch (e: unknown) {
    deps.log.warn({ code: e instanceof ApiError ? e.code : 'error', holds: holds.map((h) => h.code) }, 'upstream hold stands: /me refused');
    return [];
  }
  const clear: HoldCode[] = ['unauthorized'];
  if (me.maxCredits - me.usedCredits > deps.settings.creditReserve) clear.push('credits');
  const cleared = await clearHolds(deps.sql, clear);
  if (cleared.length > 0) deps.log.info({ cleared }, 'upstream hold cleared at startup: scheduled syncs resume');
  return cleared;
}
