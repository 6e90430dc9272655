/**
 * The startup check of DATABASE_POOL_MAX against the concurrency settings (the rule and the
 * counts: src/domain/connections.ts). A command that could hold more connections of a pool than
 * it has exits 2 before connecting to anything, naming the settings, their values and a
 * combination that fits.
 */
import { ConfigError, type Config } from '../config.ts';
import { backfillPoolPlan, checkPool, daemonPoolPlan, type PoolPlan } from '../domain/connections.ts';
import { syncConcurrency } from '../pipeline/commands/backfill.ts';
import type { Role } from '../pipeline/services/workers.ts';

/** Throws a ConfigError (exit 2) when `plan` does not fit; returns the connections it may hold. */
export function assertPoolFits(config: Config, planFor: (poolMax: number) => PoolPlan): number {
  const verdict = checkPool(config.databasePoolMax, planFor);
  if (!verdict.fits) throw new ConfigError('DATABASE_POOL_MAX', verdict.message);
  return verdict.demand;
}

/** `daemon --role <roles> [--admin-port N]`. */
export function assertDaemonPool(config: Config, opts: { roles: readonly Role[]; admin: boolean }): number {
  const p = config.pipeline;
  return assertPoolFits(config, () =>
    daemonPoolPlan({
      scheduleConcurrency: p.scheduleConcurrency,
      pollConcurrency: p.pollConcurrency,
      sinkConcurrency: p.sinkConcurrency,
      roles: {
        scheduler: opts.roles.includes('scheduler'),
        poller: opts.roles.includes('poller'),
        sink: opts.roles.includes('sink'),
        webhooks: opts.roles.includes('webhooks'),
      },
      admin: opts.admin,
    }),
  );
}

/** `backfill`: its syncs side by side, and with --wait its own poll and sink workers. */
export function assertBackfillPool(config: Config, opts: { wait: boolean }): number {
  const p = config.pipeline;
  return assertPoolFits(config, (poolMax) =>
    backfillPoolPlan({
      pollConcurrency: p.pollConcurrency,
      sinkConcurrency: p.sinkConcurrency,
      syncs: syncConcurrency(poolMax),
      wait: opts.wait,
    }),
  );
}
