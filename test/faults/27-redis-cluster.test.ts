/**
 * Scenario 27: a Redis Cluster (three masters, one replica each, cluster-node-timeout 2 s) in
 * place of the single Redis. Every process gets REDIS_CLUSTER_NODES (and a REDIS_URL that leads
 * nowhere, which must be ignored). First a channel and a playlist are backfilled through the
 * cluster: rows exact, every queue key on the one master that serves the prefix's hash tag.
 * Then a daemon runs a channel's batches and that master is SIGKILLed mid-run: its replica takes
 * over and the pipeline resumes without restarting the daemon; nothing is lost or paid twice.
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
import { postsPerVideoMax, videosPaidTwice } from '../helpers/posts.ts';
import { freePort, waitUntil } from '../helpers/proc.ts';
import { startRedisCluster, type RedisCluster } from '../helpers/redis-cluster.ts';

let rig: FaultRig;
let cluster: RedisCluster;
let clusterEnv: Record<string, string>;
beforeAll(async () => {
  rig = await startFaultRig('27-redis-cluster', {
    sim: {
      catalog: { channels: 3, channelSizes: [60, 40, 400], playlistsPerChannel: 1, playlistSize: { min: 20, max: 30 } },
    },
  });
  cluster = await startRedisCluster({ nodeTimeoutMs: 2_000 });
  clusterEnv = {
    REDIS_CLUSTER_NODES: cluster.nodesEnv,
    // nothing listens there: with REDIS_CLUSTER_NODES set, REDIS_URL must not be used at all
    REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
  };
}, 120_000);
afterAll(async () => {
  await rig?.close();
  await cluster?.stop();
});

/** Public videos of a playlist, and those with a transcript in any language (what a `langs: ['en']` source stores). */
function playlistExpected(playlistId: string): { videos: string[]; transcripts: number } {
  const ids = rig.sim.catalog
    .playlistVideoIds(playlistId)!
    .filter((id) => rig.sim.catalog.videoInfo(id)!.fate === 'public');
  return {
    videos: ids,
    transcripts: ids.filter((id) => rig.sim.catalog.videoInfo(id)!.transcriptLanguages.length > 0).length,
  };
}

/** Keys under the prefix on each master (DBSIZE would count other tests' nothing; SCAN is exact). */
async function keysPerMaster(prefix: string): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const n of (await cluster.nodes()).filter((x) => x.role === 'master' && x.alive)) {
    let cursor = '0';
    let total = 0;
    do {
      const raw = await cluster.command(n.port, 'SCAN', cursor, 'MATCH', `${prefix}*`, 'COUNT', '1000');
      // *2\r\n$len\r\ncursor\r\n*k\r\n...
      const lines = raw.split('\r\n');
      cursor = lines[2]!;
      total += Number(lines[3]!.slice(1));
    } while (cursor !== '0');
    counts.set(n.port, total);
  }
  return counts;
}

it("27 a channel and a playlist through a 3-master Redis Cluster, then the prefix's master SIGKILLed mid-run: rows exact, resumed, 0 lost, 0 paid twice", async () => {
  const { sql } = rig.db();
  const [c0, c1, c2] = rig.sim.catalog.channels();
  const playlist = c1!.playlistIds[0]!;

  // --- part 1: backfill through the cluster, rows exact as on one node ---
  const chSource = await rig.addSource({ ref: c0!.id, langs: ['en'] });
  const plSource = await rig.addSource({ kind: 'playlist', ref: playlist, langs: ['en'] });
  const backfill = await rig.run(
    ['backfill', '--source', String(chSource.id), '--source', String(plSource.id), '--timeout', '120s'],
    clusterEnv,
    180_000,
  );
  expect(backfill.stderr).not.toMatch(/MOVED|CROSSSLOT/);
  const s1 = await settle(rig, [chSource.id, plSource.id], 60_000);
  const pl = playlistExpected(playlist);
  const wantVideos1 = new Set([...publicVideoIds(rig.sim, c0!.id), ...pl.videos]).size;
  const wantTranscripts1 = expectedTranscripts(rig.sim, c0!.id) + pl.transcripts;
  const prefixMaster = await cluster.masterOfKey(rig.prefix);
  const keys = await keysPerMaster(rig.prefix);
  const keysElsewhere = [...keys].filter(([port]) => port !== prefixMaster).reduce((n, [, k]) => n + k, 0);

  // --- part 2: a daemon, and the master of the prefix's slot SIGKILLed mid-run ---
  const bigSource = await rig.addSource({ ref: c2!.id, langs: ['en'] });
  rig.sim.setJobSettings({ itemsPerSecond: 40 });
  const daemon = rig.cli(['daemon'], clusterEnv, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const pid = daemon.pid;
  const submit = await rig.run(['backfill', '--source', String(bigSource.id), '--no-wait'], clusterEnv);
  expect(submit.code, submit.stderr).toBe(0);
  await waitUntil(
    async () =>
      (await countOf(
        sql`select count(*)::int as n from batch_items i join batches b using (job_id) where b.source_id = ${bigSource.id} and i.state in ('landed', 'sunk')`,
      )) >= 60
        ? true
        : undefined,
    60_000,
    'the first items of the big channel to land',
  );
  const open = await countOf(
    sql`select count(*)::int as n from batches where status in ('submitted', 'queued', 'active')`,
  );
  expect(open).toBeGreaterThan(0);

  const victim = await cluster.masterOfKey(rig.prefix);
  await cluster.kill(victim);
  const killedAt = Date.now();
  // resumed: items landed by a poll started after the kill (fault-rig.ts landedByNewPoll)
  const resumedAt = await waitUntil(
    () => landedByNewPoll(daemon, killedAt),
    60_000,
    'items landed by a poll started after the master was killed',
  );
  // the replica took over the slot (CLUSTER NODES says so once the master is flagged failed)
  const newMaster = await waitUntil(
    () =>
      cluster.masterOfKey(rig.prefix).then(
        (p) => (p === victim ? undefined : p),
        () => undefined,
      ),
    30_000,
    'a new master for the prefix',
  );
  await cluster.waitHealthy(30_000);

  const s2 = await settle(rig, [bigSource.id], 180_000);
  const wantVideos = wantVideos1 + publicVideoIds(rig.sim, c2!.id).length;
  const wantTranscripts = wantTranscripts1 + expectedTranscripts(rig.sim, c2!.id);
  const lost = wantVideos - s2.videos + (wantTranscripts - s2.transcripts);
  const posts =
    requestsTo(rig.sim, 'POST /videosite/video/batch') + requestsTo(rig.sim, 'POST /videosite/transcript/batch');
  const resumedAfterS = (resumedAt - killedAt) / 1000;
  const sameDaemon = daemon.running() && daemon.pid === pid;

  figures('27 redis-cluster', {
    masters: 3,
    backfill_exit: backfill.code ?? -1,
    videos_1: s1.videos,
    videos_1_expected: wantVideos1,
    transcripts_1: s1.transcripts,
    transcripts_1_expected: wantTranscripts1,
    keys_on_prefix_master: keys.get(prefixMaster) ?? 0,
    keys_elsewhere: keysElsewhere,
    resumed_after_s: resumedAfterS,
    lost,
    paid_twice: videosPaidTwice(rig.sim).length,
    posts_per_video_max: postsPerVideoMax(rig.sim),
    same_pid: sameDaemon,
  });

  // part 1
  expect(backfill.code, backfill.stdout + backfill.stderr).toBe(0);
  expect(s1.videos).toBe(wantVideos1);
  expect(s1.transcripts).toBe(wantTranscripts1);
  expect(keys.get(prefixMaster) ?? 0).toBeGreaterThan(0);
  expect(keysElsewhere).toBe(0);
  // part 2
  expect(newMaster).not.toBe(victim);
  expect(resumedAfterS).toBeLessThan(30);
  expect(s2.unsettledItems).toBe(0);
  expect(Object.keys(s2.statuses)).toEqual(['completed']);
  expect(lost).toBe(0);
  expect(s2.duplicateItems).toBe(0);
  expect(posts).toBe(s2.batches);
  expect(videosPaidTwice(rig.sim)).toEqual([]);
  expect(sameDaemon).toBe(true);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
}, 420_000);
