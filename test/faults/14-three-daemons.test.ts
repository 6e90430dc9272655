/**
 * Scenario 14: three daemons start at the same moment on an empty database (it does not even
 * exist) and an empty Redis. The database is created and each migration applied exactly once
 * (an advisory lock serialises them); once sources are added, each has exactly one cron
 * scheduler in Redis however many daemons reconcile; and every batch is submitted once.
 */
import { Queue } from 'bullmq';
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MIGRATIONS_FOLDER } from '../../src/db/migrate.ts';
import { QUEUE_SCHEDULE } from '../../src/queues/names.ts';
import { settle } from '../helpers/fault-checks.ts';
import { figures, publicVideoIds, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil, within } from '../helpers/proc.ts';

let rig: FaultRig;
let scheduleQueue: Queue;
beforeAll(async () => {
  rig = await startFaultRig('14-three', { sim: { catalog: { channels: 2, channelSizes: [50, 40] } } });
  scheduleQueue = new Queue(QUEUE_SCHEDULE, { connection: rig.redis(), prefix: rig.prefix });
});
afterAll(async () => {
  await within(scheduleQueue?.close(), 3_000);
  await rig?.close();
});

it('14 three daemons at once on an empty database and Redis: migrations once, one scheduler per source, no duplicates', async () => {
  expect((await rig.redisServer.command('DBSIZE')).trim()).toBe(':0');
  const daemons = [1, 2, 3].map((i) => rig.cli(['daemon'], {}, `daemon-${i}`));
  const migrated = await Promise.all(
    daemons.map((d) => d.waitForLog((l) => l.msg === 'migrations applied', 90_000, 'migrations applied')),
  );
  await Promise.all(daemons.map((d) => d.waitForLog((l) => l.msg === 'daemon started', 90_000, 'daemon started')));
  const committed = readdirSync(MIGRATIONS_FOLDER).filter((f) => f.endsWith('.sql')).length;
  const appliedByDaemons = migrated.reduce((n, l) => n + Number(l.applied), 0);
  const createdBy = migrated.filter((l) => l.created === true).length;
  const { sql } = rig.db();
  const [recorded] = await sql<{ n: number; distinct_n: number }[]>`
    select count(*)::int as n, count(distinct hash)::int as distinct_n from drizzle.__drizzle_migrations`;

  // sources added while the three run; each daemon's reconcile keeps the cron schedulers in step
  const channels = rig.sim.catalog.channels();
  for (const ch of channels) {
    const r = await rig.run(['sources', 'add', 'channel', ch.id, '--lang', 'en', '--cron', '*/2 * * * * *']);
    expect(r.code, r.stderr).toBe(0);
  }
  await settle(rig, [], 90_000);
  // several more ticks, each seen by three daemons: nothing more is submitted
  const runs = async () => {
    const [r] = await sql<{ n: number }[]>`select count(*)::int as n from sync_runs where finished_at is not null`;
    return r!.n;
  };
  const after = await runs();
  await waitUntil(async () => ((await runs()) >= after + 2 * channels.length ? true : undefined), 60_000, 'more scheduled syncs');
  const s = await settle(rig, [], 60_000);

  const schedulers = await scheduleQueue.getJobSchedulers(0, -1);
  const posts = requestsTo(rig.sim, 'POST /videosite/video/batch') + requestsTo(rig.sim, 'POST /videosite/transcript/batch');
  const wantVideos = channels.reduce((n, c) => n + publicVideoIds(rig.sim, c.id).length, 0);
  figures('14 three-daemons', {
    migrations: committed,
    applied_by_daemons: appliedByDaemons,
    recorded: recorded!.n,
    db_created_by: createdBy,
    schedulers: schedulers.length,
    sources: channels.length,
    posts,
    duplicates: posts - s.batches + s.duplicateItems,
  });
  expect(appliedByDaemons).toBe(committed);
  expect(recorded!.n).toBe(committed);
  expect(recorded!.distinct_n).toBe(committed);
  expect(createdBy).toBe(1);
  expect(schedulers).toHaveLength(channels.length);
  expect(new Set(schedulers.map((x) => x.key)).size).toBe(channels.length);
  expect(posts).toBe(2 * channels.length);
  expect(s.batches).toBe(2 * channels.length);
  expect(s.duplicateItems).toBe(0);
  expect(s.videos).toBe(wantVideos);
  for (const d of daemons) d.kill('SIGTERM');
  const codes = await Promise.all(daemons.map((d) => d.exited));
  expect(codes.map((c) => c.code)).toEqual([0, 0, 0]);
});
