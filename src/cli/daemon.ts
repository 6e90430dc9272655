/**
 * `daemon`: the long-running process. It migrates, rebuilds in-flight work from Postgres, keeps
 * the per-source cron schedulers in step, runs the workers of its roles, and on SIGTERM/SIGINT
 * lets running jobs finish (or hands them back) within the grace period, then closes everything.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { migrateDatabase } from '../db/migrate.ts';
import { reconcile } from '../pipeline/reconcile.ts';
import { ROLES, startWorkers, type Role } from '../pipeline/workers.ts';
import { createContext } from './context.ts';

/** How often a daemon re-checks Redis against Postgres (lost jobs, new or changed sources). */
export const RECONCILE_INTERVAL_MS = 60_000;

function rolesArg(value: string): Role[] {
  const roles = value.split(',').map((r) => r.trim()).filter((r) => r !== '');
  for (const r of roles) {
    if (!(ROLES as readonly string[]).includes(r)) {
      throw new InvalidArgumentError(`"${r}" is not a role (expected a comma-separated list of ${ROLES.join(', ')}).`);
    }
  }
  if (roles.length === 0) throw new InvalidArgumentError(`expected a comma-separated list of ${ROLES.join(', ')}.`);
  return [...new Set(roles)] as Role[];
}

export function registerDaemonCommand(program: Command): void {
  program
    .command('daemon')
    .description('run the scheduler, poller and sink workers until SIGTERM/SIGINT (any number of daemons may share Redis and Postgres)')
    .option('--role <roles>', `workers to run: comma-separated ${ROLES.join(', ')}`, rolesArg, [...ROLES])
    .action(async (o: { role: Role[] }) => {
      const ctx = createContext();
      const { log } = ctx;
      await migrateDatabase(ctx.config.databaseUrl, log);
      const deps = ctx.deps();
      await warnOnEvictionPolicy(ctx.redis(), log);
      await reconcile(deps);
      const workers = startWorkers(deps, { roles: o.role, connection: ctx.redis() });
      log.info({ roles: o.role, prefix: ctx.config.queuePrefix }, 'daemon started');

      const timer = setInterval(() => {
        reconcile(deps).catch((err: unknown) => log.warn({ err }, 'reconcile failed; retrying at the next interval'));
      }, RECONCILE_INTERVAL_MS);
      timer.unref();

      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          log.info({ signal, graceMs: ctx.config.pipeline.shutdownGraceMs }, 'shutting down');
          resolve();
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
      clearInterval(timer);
      await workers.close(ctx.config.pipeline.shutdownGraceMs);
      await ctx.close();
      log.info('daemon stopped');
    });
}

/** Redis must never evict queue keys: with another policy, in-flight work can vanish silently. */
async function warnOnEvictionPolicy(redis: import('ioredis').Redis, log: import('../log.ts').Logger): Promise<void> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy !== undefined && policy !== 'noeviction') {
      log.warn(
        { policy },
        'Redis maxmemory-policy is not noeviction: under memory pressure Redis may drop queued jobs (reconcile rebuilds them from Postgres, later); set maxmemory-policy noeviction',
      );
    }
  } catch {
    // CONFIG may be disabled (managed Redis); nothing to check then
  }
}
