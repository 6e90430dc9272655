/**
 * Scenario 29: the whole pipeline through PgBouncer in transaction pooling (issue #16, point 3).
 * A private `pgbouncer` (test/helpers/pgbouncer.ts: `pool_mode = transaction`, 10 server
 * connections per database) sits in front of the scenario's own Postgres; every CLI process
 * connects through it with DATABASE_PREPARE=false: `migrate`, `sources add`, a backfill, two
 * daemons with a per-second cron while two more backfills of every source race them, a replay,
 * `status`, `events --follow`, and webhook delivery. Through a transaction pooler nothing may
 * live in a server session between transactions: the sync lock is a lease in a row
 * (src/db/leases.ts), prepared statements are off, and LISTEN reaches nobody (`events --follow`
 * and the webhook worker then work from their intervals alone).
 *
 * How it fails when the property breaks: every sync a process wins is recorded in `sync_runs`
 * with its start and end; two runs of one source that overlap in time are two processes syncing
 * it at once (`overlaps`, which must stay 0 while `busy`, the syncs refused because another
 * process held the source, shows the race really happened). A sync lock held in a server session
 * (the former advisory lock) is taken on one server connection and released on another, so it
 * either blocks the source for good or lets a second process in. Rows are compared with the
 * simulator's catalog (`videos`, `transcripts`) and with their raw items (`mismatched`). With
 * prepared statements on, statements sent through this PgBouncer (1.18) at once were never
 * answered (checked by hand: 40 at once, none within 10 s): the scenario then times out, or a
 * statement fails (`job_failures`, `prepared statement` in a process's log).
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureDatabase } from '../../src/db/migrate.ts';
import { syncSchedulers } from '../../src/pipeline/services/reconcile.ts';
import { createQueues } from '../../src/queues/queues.ts';
import { expectedTranscripts, rowsVsRaw, settle } from '../helpers/fault-checks.ts';
import { figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.ts';
import { postsPerVideoMax } from '../helpers/posts.ts';
import { freePort, waitUntil, type CliProcess } from '../helpers/proc.ts';

/** Server connections PgBouncer opens per database and user: fewer than the clients, so they share. */
const POOL_SIZE = 10;
/** Six fields: a tick every second (set in Postgres; the CLI refuses crons this close). */
const EVERY_SECOND = '* * * * * *';
/** How long the daemons' cron and the racing backfills run. */
const RACE_MS = 15_000;
/** Latency of every upstream request in the race, each way: a sync then lasts a second or two, so the racers meet. */
const API_LATENCY_MS = 300;
const CHANNEL_SIZES = [60, 45, 30];
/** The events the webhook endpoint and `events --follow` take: written by the backfill only. */
const FOLLOWED_TYPES = 'video.added,transcript.added';

let rig: FaultRig;
let bouncer: PgBouncer;
let hookServer: Server | undefined;
/** Every CLI process goes through PgBouncer, without prepared statements. */
let viaBouncer: Record<string, string>;

beforeAll(async () => {
  rig = await startFaultRig('29-pgbouncer', {
    sim: { catalog: { channels: CHANNEL_SIZES.length, channelSizes: CHANNEL_SIZES } },
  });
  bouncer = await startPgBouncer({ pgPort: rig.pg.port, poolSize: POOL_SIZE });
  viaBouncer = { DATABASE_URL: bouncer.url(rig.database), DATABASE_PREPARE: 'false', WEBHOOK_POLL_INTERVAL_MS: '1000' };
});
afterAll(async () => {
  if (hookServer) {
    hookServer.closeAllConnections();
    await new Promise<void>((resolve) => hookServer!.close(() => resolve()));
  }
  await rig?.close();
  await bouncer?.stop();
});

/** The webhook receiver: the event ids it was sent. */
async function startReceiver(): Promise<{ url: string; ids: Set<number> }> {
  const ids = new Set<number>();
  const port = await freePort();
  hookServer = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      try {
        ids.add((JSON.parse(Buffer.concat(parts).toString('utf8')) as { id: number }).id);
      } catch {
        // not JSON: not counted
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => hookServer!.listen(port, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${port}/hooks`, ids };
}

/** Peak client and server connections PgBouncer reports for the scenario's database, sampled until stopped. */
function samplePools(): { stop(): Promise<{ clients: number; servers: number }> } {
  const peak = { clients: 0, servers: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        for (const p of await bouncer.show('POOLS')) {
          if (p.database !== rig.database) continue;
          peak.clients = Math.max(peak.clients, Number(p.cl_active) + Number(p.cl_waiting));
          peak.servers = Math.max(
            peak.servers,
            Number(p.sv_active) + Number(p.sv_idle) + Number(p.sv_used) + Number(p.sv_tested) + Number(p.sv_login),
          );
        }
      } catch {
        // the console is busy: the next sample
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

const errorsOf = (p: CliProcess) => p.logs().filter((l) => Number(l.level) >= 50);

it('29 the pipeline through PgBouncer in transaction pooling: rows exact, one sync of a source at a time, events without LISTEN', async () => {
  const { sql } = rig.db();
  // PgBouncer cannot create a database (it answers 08P01 for one that does not exist, where
  // `migrate` expects Postgres's 3D000): created on the server, migrated through the pooler
  await ensureDatabase(rig.pg.url(rig.database));
  const migrated = await rig.run(['migrate'], viaBouncer);
  expect(migrated.code, migrated.stderr).toBe(0);

  const channels = rig.sim.catalog.channels();
  for (const ch of channels) {
    const r = await rig.run(['sources', 'add', 'channel', ch.id], viaBouncer);
    expect(r.code, r.stderr).toBe(0);
  }
  const hook = await startReceiver();
  // a receiver on this machine: a loopback address, reached only when allowed
  const added = await rig.run(['webhooks', 'add', hook.url, '--allow-private', '--events', FOLLOWED_TYPES], viaBouncer);
  expect(added.code, added.stderr).toBe(0);
  // started before anything is written: it must print what comes without a notification
  const follower = rig.cli(['events', '--follow', '--json', '--type', FOLLOWED_TYPES], viaBouncer, 'events-follow');

  const backfill = await rig.run(['backfill', '--all'], viaBouncer, 180_000);
  expect(backfill.code, backfill.stderr).toBe(0);
  const landed = await settle(rig, [], 60_000);

  // the race: a per-second cron in two daemons, and two backfills of every source at a time
  await sql`update sources set cron = ${EVERY_SECOND}`;
  const queues = createQueues(rig.redis(), rig.prefix);
  try {
    await syncSchedulers({ sql, queues });
  } finally {
    await queues.close();
  }
  const [before] = await sql<{ id: number }[]>`select coalesce(max(id), 0)::int as id from sync_runs`;
  const runsBefore = before!.id;
  rig.apiProxy.set({ mode: 'latency', latencyMs: API_LATENCY_MS });
  const pools = samplePools();
  const daemons = [1, 2].map((i) => rig.cli(['daemon'], viaBouncer, `daemon-${i}`));
  await Promise.all(daemons.map((d) => d.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started')));
  const raceEnd = Date.now() + RACE_MS;
  const backfillCodes: (number | null)[] = [];
  /** syncs the racing backfills found held by another process (`source N: in-flight (another process ...)`) */
  let backfillBusy = 0;
  await Promise.all(
    [1, 2].map(async () => {
      while (Date.now() < raceEnd) {
        const r = await rig.run(['backfill', '--all'], viaBouncer, 120_000);
        backfillCodes.push(r.code);
        backfillBusy += r.stdout.split('\n').filter((l) => /^source \d+: in-flight \(another process/.test(l)).length;
      }
    }),
  );
  const peak = await pools.stop();
  rig.apiProxy.set({ mode: 'pass' });
  await sql`update sources set cron = null`;

  // webhooks and `events --follow`: every followed event, with LISTEN reaching nobody
  const followed = (
    await sql<{ id: number }[]>`
    select id::int as id from events where type = any(${FOLLOWED_TYPES.split(',')}) order by id`
  ).map((r) => r.id);
  await waitUntil(
    () => (followed.every((id) => hook.ids.has(id)) ? true : undefined),
    60_000,
    'every followed event delivered',
    250,
  );
  const printed = () =>
    follower
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => (JSON.parse(l) as { id: number }).id);
  await waitUntil(
    () => (printed().length >= followed.length ? true : undefined),
    30_000,
    'every followed event printed',
    250,
  );
  follower.kill('SIGTERM');
  const followerExit = await follower.exited;

  for (const d of daemons) d.kill('SIGTERM');
  const daemonExits = await Promise.all(daemons.map((d) => d.exited));

  // a replay (free: re-sinks one batch from its raw items) and status, through the pooler
  const [batch] = await sql<
    { job_id: string }[]
  >`select job_id from batches where kind = 'video' order by submitted_at limit 1`;
  const replay = await rig.run(['replay', '--batch', batch!.job_id], viaBouncer, 120_000);
  const status = await rig.run(['status', '--json'], viaBouncer, 60_000);
  const statusSources = (JSON.parse(status.stdout) as { sources: unknown[] }).sources.length;
  const end = await settle(rig, [], 60_000);
  const raw = await rowsVsRaw(rig);

  const [overlaps] = await sql<{ n: number; runs: number }[]>`
    select
      (select count(*)::int from sync_runs a join sync_runs b on a.source_id = b.source_id and a.id < b.id
        where a.started_at < coalesce(b.finished_at, 'infinity') and b.started_at < coalesce(a.finished_at, 'infinity')) as n,
      (select count(*)::int from sync_runs where id > ${runsBefore}) as runs`;
  const [leftLeases] = await sql<{ n: number }[]>`select count(*)::int as n from source_sync_leases`;
  const logs = daemons.flatMap((d) => d.logs());
  const busy =
    logs.filter((l) => l.event === 'schedule.sync_in_flight' && /another process/.test(String(l.detail))).length +
    backfillBusy;
  const jobFailures = logs.filter((l) => l.event === 'job.failed').length;
  const daemonErrors = daemons.flatMap(errorsOf);
  const preparedErrors = [...daemons, follower].filter((p) => /prepared statement/.test(p.stderr())).length;
  const wantVideos = channels.reduce((n, c) => n + publicVideoIds(rig.sim, c.id).length, 0);
  const wantTranscripts = channels.reduce((n, c) => n + expectedTranscripts(rig.sim, c.id), 0);

  figures('29 pgbouncer', {
    pool_size: POOL_SIZE,
    peak_clients: peak.clients,
    peak_servers: peak.servers,
    videos: end.videos,
    want_videos: wantVideos,
    transcripts: end.transcripts,
    want_transcripts: wantTranscripts,
    mismatched: raw.mismatched.length,
    race_s: RACE_MS / 1000,
    sync_runs: overlaps!.runs,
    busy,
    overlaps: overlaps!.n,
    backfills: backfillCodes.length,
    posts_per_video_max: postsPerVideoMax(rig.sim),
    events: followed.length,
    webhooked: followed.filter((id) => hook.ids.has(id)).length,
    followed: new Set(printed()).size,
    job_failures: jobFailures,
    leases_left: leftLeases!.n,
  });

  expect(migrated.code).toBe(0);
  // rows exact, as without the pooler, and written once
  expect(landed.videos).toBe(wantVideos);
  expect(end.videos).toBe(wantVideos);
  expect(end.transcripts).toBe(wantTranscripts);
  expect(raw.mismatched).toEqual([]);
  expect(raw.orphans).toEqual([]);
  expect(end.duplicateItems).toBe(0);
  expect(postsPerVideoMax(rig.sim)).toBe(1);
  // one sync of a source at a time, although two daemons and two backfills wanted it at once
  expect(overlaps!.n).toBe(0);
  expect(overlaps!.runs).toBeGreaterThan(0);
  expect(busy).toBeGreaterThan(0);
  expect(leftLeases!.n).toBe(0);
  expect(backfillCodes.length).toBeGreaterThanOrEqual(2);
  expect(backfillCodes.filter((c) => c !== 0)).toEqual([]);
  // really multiplexed: more clients than server connections
  expect(peak.servers).toBeLessThanOrEqual(POOL_SIZE);
  expect(peak.clients).toBeGreaterThan(peak.servers);
  // no statement failed for the pooler's sake
  expect(preparedErrors).toBe(0);
  expect(jobFailures).toBe(0);
  expect(daemonErrors.map((l) => l.event)).toEqual([]);
  // delivered and printed from the intervals, LISTEN notwithstanding
  expect(followed.length).toBe(wantVideos + wantTranscripts);
  expect(followed.filter((id) => !hook.ids.has(id))).toEqual([]);
  expect(new Set(printed()).size).toBe(followed.length);
  expect(followerExit.code).toBe(0);
  expect(errorsOf(follower).map((l) => l.event)).toEqual([]);
  expect(daemonExits.map((e) => e.code)).toEqual([0, 0]);
  expect(replay.code, replay.stderr).toBe(0);
  expect(status.code, status.stderr).toBe(0);
  expect(statusSources).toBe(channels.length);
  // a dozen CLI processes one after another (each ~5-10 s to start and end on a loaded 2-core machine), a 15 s race
}, 480_000);
