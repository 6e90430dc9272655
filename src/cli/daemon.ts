/**
 * `daemon`: the long-running process. It migrates, rebuilds in-flight work from Postgres, keeps
 * the per-source cron schedulers in step, runs the workers of its roles, and on SIGTERM/SIGINT
 * lets running jobs finish (or hands them back) within the grace period, then closes everything.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { assertSafeExposure } from '../admin/auth.ts';
import { createMetrics, type AdminMetrics } from '../admin/metrics.ts';
import { DEFAULT_ADMIN_HOST, startAdminServer, type AdminServer } from '../admin/server.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { startDailyPrune } from '../pipeline/commands/prune.ts';
import { createSchemaGate } from '../pipeline/services/schema-gate.ts';
import { startHoldRecheck } from '../pipeline/services/upstream-holds.ts';
import { reconcile } from '../pipeline/services/reconcile.ts';
import { FORCE_CLOSE_WAIT_MS, ROLES, startWorkers, type Role } from '../pipeline/services/workers.ts';
import { redisTarget } from '../queues/connection.ts';
import { intArg } from './args.ts';
import { createContext, type Context } from './context.ts';
import { assertDaemonPool } from './pool-check.ts';
import { redisReadyOrStopped } from './redis-ready.ts';
import { UsageError } from './exit.ts';

function rolesArg(value: string): Role[] {
  const roles = value
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
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
    .description(
      'run the scheduler, poller, sink and webhook delivery workers until SIGTERM/SIGINT (any number of daemons may share Redis and Postgres)',
    )
    .option('--role <roles>', `workers to run: comma-separated ${ROLES.join(', ')}`, rolesArg, [...ROLES])
    .option(
      '--admin-port <n>',
      'serve /healthz, /readyz, /metrics, the overview (/) and the queue dashboard (/admin/queues) on this port',
      intArg(0, 65_535),
    )
    .option(
      '--admin-host <host>',
      'interface of the admin server (beyond loopback only with ADMIN_TOKEN set)',
      DEFAULT_ADMIN_HOST,
    )
    .action(async (o: { role: Role[]; adminPort?: number; adminHost: string }) => {
      // Listen before anything else: a process without a listener dies of SIGTERM's default
      // action, and "daemon started" is written synchronously just before the workers' loop
      // begins, so a supervisor that signals as soon as it reads that line (or during a long
      // migration) must find the handler already there. A signal during startup stops the
      // daemon as soon as startup is done.
      let admin: AdminServer | undefined;
      const stopRequested = new Promise<NodeJS.Signals>((resolve) => {
        const stop = (signal: NodeJS.Signals) => {
          log.info({ event: 'daemon.stopping', signal, graceMs: ctx.config.pipeline.shutdownGraceMs }, 'shutting down');
          admin?.markStopping();
          resolve(signal);
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
      const metrics = o.adminPort === undefined ? undefined : createMetrics();
      const ctx = createContext({ metrics, longRunning: true });
      const { log } = ctx;
      // before anything connects: an exposed admin server without a token is a configuration error
      if (metrics) assertSafeExposure(o.adminHost, ctx.config.admin.token);
      // and so is a pool that the workers of these roles and the admin server could exhaust
      assertDaemonPool(ctx.config, { roles: o.role, admin: metrics !== undefined });
      await migrateDatabase(ctx.config.databaseUrl, log, ctx.config.migration);
      const deps = ctx.deps();
      admin = metrics ? await startAdmin(ctx, metrics, o.adminHost, o.adminPort!) : undefined;
      if (!(await redisOrStop(ctx, admin, stopRequested))) return;
      await warnOnEvictionPolicy(ctx.redis(), log);
      await reconcile(deps);
      // A fixed API key or renewed credits (a billing period that starts) end a hold without a
      // person: look at once (free), then every HOLD_RECHECK_MS. Only the roles that call the API
      // are held, so only they look.
      const holdRecheck =
        o.role.includes('scheduler') || o.role.includes('poller')
          ? startHoldRecheck(deps, { intervalMs: deps.settings.holdRecheckMs })
          : undefined;
      await holdRecheck?.checkAtStart();
      // rolling upgrades: a newer build's migration not marked backward-compatible stops this
      // daemon scheduling; looked at now and at every reconcile interval (src/pipeline/services/schema-gate.ts)
      const schemaGate = createSchemaGate(deps);
      await schemaGate.check();
      const workers = startWorkers(deps, { roles: o.role, connection: ctx.redis(), schemaGate });
      // retention: every daemon looks, the one that claims the day prunes (Postgres only, any role)
      const dailyPrune = startDailyPrune(deps);
      log.info({ event: 'daemon.started', roles: o.role, prefix: ctx.config.queuePrefix }, 'daemon started');

      const stopReconciling = reconcileWhileRunning(ctx, deps, schemaGate);

      await stopRequested;
      stopReconciling();
      // aborts a /me in flight; a re-check stuck on an unreachable Postgres must not eat the grace
      const holdRecheckStopped = holdRecheck?.stop();
      // a running prune stops at its next statement (each is a short transaction)
      const dailyPruneStopped = dailyPrune.stop();
      // The whole shutdown fits in the grace period: running jobs get the grace minus what a
      // forced close and closing the connections may take, and closing is bounded too, because
      // an unreachable Redis or Postgres never answers a QUIT.
      const grace = ctx.config.pipeline.shutdownGraceMs;
      const deadline = Date.now() + grace;
      await workers.close(Math.max(grace - SHUTDOWN_CLOSE_RESERVE_MS - FORCE_CLOSE_WAIT_MS, grace / 3));
      await settleWithin(Promise.all([holdRecheckStopped, dailyPruneStopped]), SHUTDOWN_CLOSE_MIN_MS);
      await admin?.close();
      const closed = await settleWithin(ctx.close(), Math.max(SHUTDOWN_CLOSE_MIN_MS, deadline - Date.now()));
      log.info({ event: 'daemon.stopped', closedCleanly: closed }, 'daemon stopped');
      // whatever still holds the event loop (a connection stuck reconnecting) must not keep a
      // stopped daemon alive
      setTimeout(() => process.exit(), SHUTDOWN_EXIT_DELAY_MS).unref();
    });
}

/**
 * Started while Redis is down, every later step would wait in ioredis's offline queue for good:
 * wait here, where SIGTERM/SIGINT still ends the process. False when stopped before Redis came.
 */
async function redisOrStop(
  ctx: Context,
  admin: AdminServer | undefined,
  stopRequested: Promise<NodeJS.Signals>,
): Promise<boolean> {
  // a connection still being made is no news: only one not made within a moment is
  const warn = setTimeout(
    () => ctx.log.warn({ event: 'daemon.waiting_for_redis', redis: redisTarget(ctx.redis()) }, 'waiting for Redis'),
    REDIS_WAIT_WARN_MS,
  );
  let ready: boolean;
  try {
    ready = await redisReadyOrStopped(ctx.redis(), stopRequested);
  } finally {
    clearTimeout(warn);
  }
  if (ready) return true;
  await admin?.close();
  const closed = await settleWithin(ctx.close(), ctx.config.pipeline.shutdownGraceMs);
  ctx.log.info({ event: 'daemon.stopped', closedCleanly: closed, started: false }, 'daemon stopped');
  setTimeout(() => process.exit(), SHUTDOWN_EXIT_DELAY_MS).unref();
  return false;
}

/**
 * Reconcile (and look at the schema gate) every RECONCILE_INTERVAL_MS, and at once after Redis
 * reconnects; returns what stops both.
 */
function reconcileWhileRunning(
  ctx: Context,
  deps: ReturnType<Context['deps']>,
  schemaGate: ReturnType<typeof createSchemaGate>,
): () => void {
  const { log } = ctx;
  const timer = setInterval(() => {
    reconcile(deps).catch((err: unknown) =>
      log.warn({ event: 'reconcile.failed', err }, 'reconcile failed; retrying at the next interval'),
    );
    // a failed read keeps the last verdict; the next interval looks again
    schemaGate.check().catch(() => undefined);
  }, ctx.config.pipeline.reconcileIntervalMs);
  timer.unref();
  // A Redis that comes back may have come back empty (a restart without persistence, a
  // failover to an empty replica): rebuild the work in flight from Postgres at once rather
  // than at the next interval. Harmless when nothing was lost (job IDs are deterministic).
  const stopReconnectReconcile = reconcileOnReconnect(ctx.redis(), () =>
    reconcile(deps).then(
      (r) =>
        log.info({ event: 'reconcile.after_reconnect', ...r }, 'redis reconnected: reconciled queues with Postgres'),
      (err: unknown) =>
        log.warn(
          { event: 'reconcile.failed', err },
          'reconcile after a Redis reconnect failed; retrying at the next interval',
        ),
    ),
  );
  return () => {
    clearInterval(timer);
    stopReconnectReconcile();
  };
}

/** How long a daemon waits for its first Redis connection before it says it is waiting, ms. */
export const REDIS_WAIT_WARN_MS = 2_000;

/** Of the grace period, the part kept for closing connections after the workers stopped. */
export const SHUTDOWN_CLOSE_RESERVE_MS = 2_000;
/** Closing connections gets at least this long, whatever is left of the grace period. */
export const SHUTDOWN_CLOSE_MIN_MS = 500;
/** After "daemon stopped", exit even if a handle is still open. */
export const SHUTDOWN_EXIT_DELAY_MS = 100;

/** Whether `p` settled within `ms` (its outcome otherwise ignored). */
async function settleWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  if (timer) clearTimeout(timer);
  return settled;
}

/** The admin server of `--admin-port`. A port that cannot be bound is a usage error (exit 2). */
async function startAdmin(ctx: Context, metrics: AdminMetrics, host: string, port: number): Promise<AdminServer> {
  const token = ctx.config.admin.token;
  try {
    const admin = await startAdminServer({
      host,
      port,
      token,
      metricsToken: ctx.config.admin.metricsToken,
      allowedHosts: ctx.config.admin.allowedHosts,
      sql: ctx.db().sql,
      redis: ctx.redis(),
      queues: ctx.queues(),
      metrics,
      secrets: [
        ctx.config.api.apiKey,
        ctx.config.embeddings?.apiKey,
        token,
        ctx.config.admin.metricsToken,
        urlPassword(ctx.config.databaseUrl),
        urlPassword(ctx.config.redisUrl),
        ctx.config.redisPassword,
      ],
      videoUrlTemplate: ctx.config.videoUrlTemplate,
      embeddings: ctx.config.embeddings,
      keyFingerprint: ctx.api().keyFingerprint,
      log: ctx.log,
    });
    ctx.log.info(
      { event: 'admin.listening', url: admin.url, auth: token ? 'ADMIN_TOKEN' : 'none (loopback only)' },
      'admin server listening',
    );
    return admin;
  } catch (e: unknown) {
    await ctx.close();
    const code = (e as { code?: unknown } | null)?.code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new UsageError(`--admin-port ${port}: cannot listen on ${host}:${port} (${String(code)})`);
    }
    throw e;
  }
}

/** Redis must never evict queue keys: with another policy, in-flight work can vanish silently. */
async function warnOnEvictionPolicy(
  redis: import('../queues/connection.ts').RedisClient,
  log: import('../log.ts').Logger,
): Promise<void> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy !== undefined && policy !== 'noeviction') {
      log.warn(
        { event: 'daemon.redis_eviction_policy', policy },
        'Redis maxmemory-policy is not noeviction: under memory pressure Redis may drop queued jobs (reconcile rebuilds them from Postgres, later); set maxmemory-policy noeviction',
      );
    }
  } catch {
    // CONFIG may be disabled (managed Redis); nothing to check then
  }
}

/**
 * Call `run` each time the connection is ready again after having been lost (not on the first
 * connect), one run at a time. Returns a function that stops listening.
 */
export function reconcileOnReconnect(
  redis: import('../queues/connection.ts').RedisClient,
  run: () => Promise<void>,
): () => void {
  let lost = false;
  let running: Promise<void> | undefined;
  const onClose = () => {
    lost = true;
  };
  const onReady = () => {
    if (!lost) return;
    lost = false;
    running ??= run().finally(() => {
      running = undefined;
    });
  };
  redis.on('close', onClose);
  redis.on('ready', onReady);
  return () => {
    redis.off('close', onClose);
    redis.off('ready', onReady);
  };
}

/** The password of a connection URL, if it has one (never shown on an admin page). */
function urlPassword(url: string): string | undefined {
  try {
    const p = new URL(url).password;
    return p === '' ? undefined : decodeURIComponent(p);
  } catch {
    return undefined;
  }
}
