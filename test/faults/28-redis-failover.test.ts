/**
 * Scenario 28: a failing-over Redis, as a managed Redis does it. Two plain servers: A, the
 * primary, and B, its replica; the daemon reaches "the Redis endpoint" through the rig's proxy,
 * which leads to A. Mid-run B is promoted (`REPLICAOF NO ONE`), A demoted (`REPLICAOF B`) and
 * the endpoint moved to B (the proxy re-pointed: new connections go to B, open ones stay on A,
 * as after a DNS change). A now answers every write READONLY: the daemon's connections must
 * leave it (`redis.readonly_reconnect`) and find B, without a restart; nothing lost or paid twice.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectedTranscripts, settle } from '../helpers/fault-checks.ts';
import {
  countOf,
  figures,
  landedByNewPoll,
  publicVideoIds,
  requestsTo,
  startFaultRig,
  type FaultRig,
} from '../helpers/fault-rig.ts';
import { videosPaidTwice } from '../helpers/posts.ts';
import { waitUntil } from '../helpers/proc.ts';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.ts';

let rig: FaultRig;
let replica: RedisServer;
beforeAll(async () => {
  rig = await startFaultRig('28-redis-failover', { sim: { catalog: { channels: 1, channelSizes: [400] } } });
  replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(rig.redisServer.port)] });
  await waitUntil(
    async () => ((await replica.command('INFO', 'replication')).includes('master_link_status:up') ? true : undefined),
    15_000,
    'B to replicate A',
  );
}, 60_000);
afterAll(async () => {
  await rig?.close();
  await replica?.stop();
});

it('28 primary demoted with REPLICAOF, replica promoted, endpoint moved: the daemon follows, 0 lost, 0 paid twice, same process', async () => {
  const { sql } = rig.db();
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id, langs: ['en'] });
  // slow enough that both batches are mid-way at the failover
  rig.sim.setJobSettings({ itemsPerSecond: 40 });

  const daemon = rig.cli(['daemon'], {}, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const pid = daemon.pid;
  const submit = await rig.run(['backfill', '--source', String(source.id), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);
  await waitUntil(
    async () =>
      (await countOf(sql`select count(*)::int as n from batch_items where state in ('landed', 'sunk')`)) >= 60
        ? true
        : undefined,
    60_000,
    'the first items to land',
  );
  expect(
    await countOf(sql`select count(*)::int as n from batches where status in ('submitted', 'queued', 'active')`),
  ).toBe(2);

  // the failover: B promoted, A demoted to B's replica, the endpoint moved to B
  expect((await replica.command('REPLICAOF', 'NO', 'ONE')).trim()).toBe('+OK');
  expect((await rig.redisServer.command('REPLICAOF', '127.0.0.1', String(replica.port))).trim()).toBe('+OK');
  rig.redisProxy.retarget(replica.port);
  const failedOverAt = Date.now();

  // resumed: items landed by a poll started after the failover (fault-rig.ts landedByNewPoll)
  const resumedAt = await waitUntil(
    () => landedByNewPoll(daemon, failedOverAt),
    60_000,
    'items landed by a poll started after the failover',
  );
  await daemon.waitForLog((l) => l.event === 'redis.readonly_reconnect', 30_000, 'the READONLY reconnect');

  const s = await settle(rig, [source.id], 120_000);
  const wantVideos = publicVideoIds(rig.sim, ch.id).length;
  const wantTranscripts = expectedTranscripts(rig.sim, ch.id);
  const lost = wantVideos - s.videos + (wantTranscripts - s.transcripts);
  const posts =
    requestsTo(rig.sim, 'POST /videosite/video/batch') + requestsTo(rig.sim, 'POST /videosite/transcript/batch');
  const readonlyReconnects = daemon.logs().filter((l) => l.event === 'redis.readonly_reconnect').length;
  const resumedAfterS = (resumedAt - failedOverAt) / 1000;
  const samePid = daemon.running() && daemon.pid === pid;
  // A is a replica now and B holds the queues: the daemon writes to B
  const aRole = await rig.redisServer.command('ROLE');
  figures('28 redis-failover', {
    readonly_reconnects: readonlyReconnects,
    resumed_after_s: resumedAfterS,
    lost,
    paid_twice: videosPaidTwice(rig.sim).length,
    duplicates: posts - s.batches + s.duplicateItems,
    items: s.items,
    same_pid: samePid,
  });

  expect(aRole).toContain('slave');
  expect(readonlyReconnects).toBeGreaterThan(0);
  expect(resumedAfterS).toBeLessThan(30);
  expect(s.statuses).toEqual({ completed: 2 });
  expect(s.items).toBe(2 * 400);
  expect(s.unsettledItems).toBe(0);
  expect(lost).toBe(0);
  expect(posts).toBe(s.batches);
  expect(s.duplicateItems).toBe(0);
  expect(videosPaidTwice(rig.sim)).toEqual([]);
  expect(samePid).toBe(true);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
}, 300_000);
