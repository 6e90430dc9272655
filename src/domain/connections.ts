/**
 * How many connections of one Postgres pool a command may hold at once, and whether
 * DATABASE_POOL_MAX covers it: checked at startup, before anything runs.
 *
 * postgres.js queues a statement while every connection of its pool is busy. For most steps that
 * is only a wait (a poll, a sink chunk, a /metrics read: each holds one connection, then gives it
 * back), but a sync may hold two at once: its statements or transactions, and the renewal of its
 * lease (src/db/locks.ts) every SYNC_LEASE_RENEW_MS, which may come while a transaction waits on
 * the credit guard's lock: syncs that together hold the whole pool would wait on each other.
 * Counting every job at the most it holds at once and refusing
 * a pool smaller than the sum rules that out, and keeps statements from queueing behind each
 * other when 2 000 sources fire together (a /metrics family waiting for a connection misses its
 * deadline and drops out of the scrape).
 *
 * The counts are of the process's one pool (src/db/connection.ts).
 */
import { WEBHOOK_SLOTS } from './webhooks.ts';

/** The concurrency settings the check weighs (environment variable names). */
export type ConcurrencyVariable = 'SCHEDULE_CONCURRENCY' | 'POLL_CONCURRENCY' | 'SINK_CONCURRENCY';

/**
 * A sync: one statement or transaction at a time (submit.ts holds no connection across the POST;
 * credits, claims and the run's record are statements or transactions in turn), plus its lease's
 * renewal, which may run beside it.
 */
export const CONNECTIONS_PER_SYNC = 2;
/** A poll: one landing transaction at a time; the answer is streamed between them. */
export const CONNECTIONS_PER_POLL = 1;
/** A sink job: one chunk's transaction at a time. */
export const CONNECTIONS_PER_SINK = 1;
/** A daemon's reconcile (at start, every RECONCILE_INTERVAL_MS, after a Redis reconnect): one statement at a time. */
export const RECONCILE_CONNECTIONS = 1;
/** A daemon's upstream-hold re-check (scheduler and poller roles): one statement at a time. */
export const HOLD_RECHECK_CONNECTIONS = 1;
/** Webhook delivery (role webhooks): WEBHOOK_SLOTS endpoints side by side, one statement each at a time. */
export const WEBHOOK_CONNECTIONS = WEBHOOK_SLOTS;
/** The search indexer beside the poll and sink workers (src/pipeline/services/search-index.ts), or a command's drain of it: one transaction at a time. */
export const SEARCH_INDEX_CONNECTIONS = 1;
/** The daily prune one daemon runs: one statement or transaction at a time. */
export const PRUNE_CONNECTIONS = 1;
/**
 * The admin server (`daemon --admin-port`): a /metrics scrape reads its SQL families at once (nine,
 * src/admin/metrics.ts; what does not fit waits for a connection of the pool, a few ms), /readyz
 * pings and checks migrations at once (src/admin/health.ts), and the overview reads one statement
 * at a time, each possibly while the others run.
 */
export const ADMIN_CONNECTIONS = 8;
/** A backfill's (or replay's) wait: one progress read at a time. */
export const WAIT_CONNECTIONS = 1;

/** Workers of one kind: `value` jobs at once (its setting), each holding up to `perJob` connections. */
export interface WorkerShare {
  variable: ConcurrencyVariable;
  value: number;
  perJob: number;
  /** plural noun for the message: "syncs", "polls", "sinks" */
  what: string;
}

/** Connections a command needs whatever the concurrency settings say. */
export interface FixedShare {
  what: string;
  connections: number;
}

export interface PoolPlan {
  /** the command, for the message: "the daemon", "backfill" */
  command: string;
  workers: WorkerShare[];
  fixed: FixedShare[];
}

export type PoolVerdict =
  | { fits: true; demand: number }
  | {
      fits: false;
      demand: number;
      /** the concurrency settings lowered until they fit `poolMax`; undefined when even 1 each does not */
      lowered: Partial<Record<ConcurrencyVariable, number>> | undefined;
      /** names both settings, their values, and valid combinations */
      message: string;
    };

export interface DaemonPoolInput {
  scheduleConcurrency: number;
  pollConcurrency: number;
  sinkConcurrency: number;
  /** webhooks: optional, so that callers from before the role (tests) need not name it */
  roles: { scheduler: boolean; poller: boolean; sink: boolean; webhooks?: boolean };
  /** `--admin-port` given */
  admin: boolean;
}

/** What a daemon with these roles holds at most. */
export function daemonPoolPlan(d: DaemonPoolInput): PoolPlan {
  const workers: WorkerShare[] = [];
  if (d.roles.scheduler)
    workers.push({
      variable: 'SCHEDULE_CONCURRENCY',
      value: d.scheduleConcurrency,
      perJob: CONNECTIONS_PER_SYNC,
      what: 'syncs',
    });
  if (d.roles.poller)
    workers.push({
      variable: 'POLL_CONCURRENCY',
      value: d.pollConcurrency,
      perJob: CONNECTIONS_PER_POLL,
      what: 'polls',
    });
  if (d.roles.sink)
    workers.push({
      variable: 'SINK_CONCURRENCY',
      value: d.sinkConcurrency,
      perJob: CONNECTIONS_PER_SINK,
      what: 'sinks',
    });
  const fixed: FixedShare[] = [
    { what: 'reconcile', connections: RECONCILE_CONNECTIONS },
    { what: 'daily prune', connections: PRUNE_CONNECTIONS },
  ];
  if (d.roles.scheduler || d.roles.poller) fixed.push({ what: 'hold re-check', connections: HOLD_RECHECK_CONNECTIONS });
  if (d.roles.poller || d.roles.sink) fixed.push({ what: 'search indexer', connections: SEARCH_INDEX_CONNECTIONS });
  if (d.roles.webhooks === true) fixed.push({ what: 'webhook delivery', connections: WEBHOOK_CONNECTIONS });
  if (d.admin) fixed.push({ what: 'admin server', connections: ADMIN_CONNECTIONS });
  return { command: 'the daemon', workers, fixed };
}

export interface BackfillPoolInput {
  pollConcurrency: number;
  sinkConcurrency: number;
  /** syncs the backfill runs side by side (src/pipeline/commands/backfill.ts syncConcurrency) */
  syncs: number;
  /** with --wait it runs poll and sink workers; without, only its syncs */
  wait: boolean;
}

/** What `backfill` holds at most: its own syncs side by side, its poll and sink workers, its wait. */
export function backfillPoolPlan(b: BackfillPoolInput): PoolPlan {
  const workers: WorkerShare[] = b.wait
    ? [
        { variable: 'POLL_CONCURRENCY', value: b.pollConcurrency, perJob: CONNECTIONS_PER_POLL, what: 'polls' },
        { variable: 'SINK_CONCURRENCY', value: b.sinkConcurrency, perJob: CONNECTIONS_PER_SINK, what: 'sinks' },
      ]
    : [];
  return {
    command: 'backfill',
    workers,
    fixed: [
      { what: `${b.syncs} sync${b.syncs === 1 ? '' : 's'} side by side`, connections: b.syncs * CONNECTIONS_PER_SYNC },
      { what: 'progress', connections: WAIT_CONNECTIONS },
      // with --wait its sink workers' indexer, and the drain at the end
      ...(b.wait ? [{ what: 'search indexer', connections: SEARCH_INDEX_CONNECTIONS }] : []),
    ],
  };
}

export function poolDemand(plan: PoolPlan): number {
  return plan.workers.reduce((n, w) => n + w.value * w.perJob, 0) + plan.fixed.reduce((n, f) => n + f.connections, 0);
}

/**
 * Lower the settings one step at a time, always the one holding the most connections, until the
 * plan fits `poolMax`: undefined when it does not fit even at 1 each.
 */
function lowerToFit(plan: PoolPlan, poolMax: number): Partial<Record<ConcurrencyVariable, number>> | undefined {
  const workers = plan.workers.map((w) => ({ ...w }));
  const lowered = { ...plan, workers };
  while (poolDemand(lowered) > poolMax) {
    const candidates = workers.filter((w) => w.value > 1);
    if (candidates.length === 0) return undefined;
    const biggest = candidates.reduce((a, b) => (b.value * b.perJob > a.value * a.perJob ? b : a));
    biggest.value--;
  }
  return Object.fromEntries(workers.map((w) => [w.variable, w.value]));
}

const assignments = (values: Partial<Record<ConcurrencyVariable, number>>) =>
  Object.entries(values)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');

/**
 * Whether `poolMax` connections per pool (DATABASE_POOL_MAX) cover the plan; when not, the
 * message (to follow "DATABASE_POOL_MAX: ") gives the values, what needs them, and combinations
 * that fit. `planFor` gives the plan for a pool size: a backfill runs more syncs side by side in
 * a bigger pool, so the smallest pool that fits is searched for, not read off one plan.
 */
export function checkPool(poolMax: number, planFor: (poolMax: number) => PoolPlan): PoolVerdict {
  const plan = planFor(poolMax);
  const demand = poolDemand(plan);
  if (demand <= poolMax) return { fits: true, demand };
  // ends: what grows with the pool (a backfill's syncs side by side) stops growing at its cap
  let enough = demand;
  while (poolDemand(planFor(enough)) > enough) enough++;
  const current = Object.fromEntries(plan.workers.map((w) => [w.variable, w.value])) as Partial<
    Record<ConcurrencyVariable, number>
  >;
  const parts = [
    ...plan.workers.map((w) => `${w.value} ${w.what} × ${w.perJob}`),
    ...plan.fixed.map((f) => `${f.what}: ${f.connections}`),
  ];
  const lowered = lowerToFit(plan, poolMax);
  const withCurrent = plan.workers.length > 0 ? ` with ${assignments(current)}` : '';
  const message =
    `${poolMax} connections per pool are too few: ${plan.command}${withCurrent} may hold ${demand} at once ` +
    `(${parts.join(', ')}). Valid: DATABASE_POOL_MAX=${enough}${withCurrent}` +
    (lowered ? `, or DATABASE_POOL_MAX=${poolMax} with ${assignments(lowered)}` : '');
  return { fits: false, demand, lowered, message };
}
