/**
 * A 403 that is not the API's own answer (a gateway's HTML page, as one has answered a bad key),
 * against the simulator's fault script over real HTTP with real Postgres and Redis: it is never
 * read as a restricted video. A free `GET /me` decides: refused too, the key is bad (held, exit
 * 3, as a 401 is); answered, a passing fault (retryable, nothing marked, nothing held).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSubmittedBatch } from '../../src/db/batch-records.ts';
import { clearHolds, holdsForKey } from '../../src/db/upstream-holds.ts';
import { runBackfill, type BackfillReport } from '../../src/pipeline/commands/backfill.ts';
import { pollBatch } from '../../src/pipeline/ingest/poll-batch.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import type { ScriptStep } from '../../src/simulator/faults.ts';
import { createPipelineHarness, runCli, type PipelineHarness } from '../helpers/pipeline.ts';
import { expectCleanError } from '../helpers/cli.ts';

const GATEWAY_PAGE =
  '<html><head><title>403 Forbidden</title></head><body><center><h1>403 Forbidden</h1></center></body></html>';

let h: PipelineHarness;
let sourceId: number;
let channelId: string;

/** A gateway's 403 page for requests matching `match` (`METHOD /path`, `*` a segment, `**` anything). */
function gateway403(match: string): ScriptStep {
  return { match, status: 403, body: GATEWAY_PAGE, headers: { 'content-type': 'text/html' } };
}

function backfill(): Promise<BackfillReport> {
  return runBackfill(h.deps, { sourceIds: [sourceId], wait: true, timeoutMs: 60_000, checkIntervalMs: 100 });
}

async function holds() {
  return holdsForKey(h.database.sql, h.api.keyFingerprint);
}

async function lastRun() {
  const [run] = await h.database.sql<{ outcome: string; detail: string | null }[]>`
    select outcome, detail from sync_runs where source_id = ${sourceId} order by id desc limit 1`;
  return run!;
}

/** Nothing was marked about videos: none gone, no item failed as forbidden. */
async function nothingMarkedForbidden(): Promise<void> {
  const marked = await h.database.sql`
    select 1 from videos where gone_at is not null
    union all select 1 from batch_items where error_code in ('forbidden', 'gateway-forbidden')
    union all select 1 from batch_submissions where state = 'failed'`;
  expect(marked).toHaveLength(0);
}

beforeAll(async () => {
  h = await createPipelineHarness('gateway_forbidden', {
    catalog: { channels: 1, channelSizes: [30], noTranscriptShare: 0.3, privateShare: 0, goneShare: 0 },
    jobs: { queuedMs: 100, itemsPerSecond: 2000, transcriptJobMs: 300 },
  });
  h.startWorkers(['poller', 'sink']);
  channelId = h.sim.catalog.channels()[0]!.id;
  const s = await registerSource(h.deps, {
    kind: 'channel',
    ref: channelId,
    limit: 5000,
    langs: ['en'],
    textOnly: false,
    cron: null,
  });
  sourceId = s.id;
  expect((await backfill()).exitCode).toBe(0);
});

afterAll(async () => {
  await h?.close();
});

describe('a 403 from a gateway while /me answers', () => {
  it('on a listing: the sync fails as a passing fault (exit 1, retryable), no hold, nothing marked; the next sync goes through', async () => {
    h.sim.script([gateway403(`GET /videosite/channel/videos`)]);
    const report = await backfill();
    expect(report.exitCode).toBe(1);
    expect(report.syncErrors).toEqual([expect.objectContaining({ sourceId, code: 'gateway-forbidden' })]);
    expect(await lastRun()).toMatchObject({ outcome: 'error' });
    const [src] = await h.database.sql<
      { last_error_code: string }[]
    >`select last_error_code from sources where id = ${sourceId}`;
    expect(src!.last_error_code).toBe('gateway-forbidden');
    expect(await holds()).toEqual([]);
    await nothingMarkedForbidden();

    const again = await backfill();
    expect(again.syncErrors).toEqual([]);
    expect(again.exitCode).toBe(0);
  });

  it('on a generation request: not a refusal of the video (which would be its one attempt); the next sync generates it', async () => {
    await h.database.sql`update sources set generate_missing = true where id = ${sourceId}`;
    const requests = () => h.sim.stats().byEndpoint['GET /transcript']?.total ?? 0;
    const before = requests();
    h.sim.script([gateway403('GET /transcript')]);
    const report = await backfill();
    expect(report.syncErrors).toEqual([expect.objectContaining({ code: 'gateway-forbidden' })]);
    expect(requests() - before).toBe(1);
    const [refused] = await h.database.sql<{ video_id: string; state: string }[]>`
      select request->>'videoId' as video_id, state from batch_submissions where request->>'mode' = 'generate'`;
    expect(refused!.state).toBe('not-created');
    await nothingMarkedForbidden();
    expect(await holds()).toEqual([]);

    const again = await backfill();
    expect(again.syncErrors).toEqual([]);
    const [generated] = await h.database.sql<
      { origin: string }[]
    >`select origin from transcripts where video_id = ${refused!.video_id}`;
    expect(generated?.origin).toBe('generated');
  });

  it('on a batch poll: polled again, nothing held', async () => {
    await insertSubmittedBatch(h.database.sql, {
      // no source: a backfill of the source must not wait for this batch
      jobId: 'batch_gateway_a',
      sourceId: null,
      kind: 'video',
      lang: null,
      mode: 'batch',
      creditsEstimated: 2,
      request: { videoIds: ['v'] },
      textOnly: false,
      replayOf: null,
      firstPollDelayMs: 60_000,
    });
    h.sim.script([gateway403('GET /videosite/batch/batch_gateway_a')]);
    expect((await pollBatch(h.deps, 'batch_gateway_a')).terminal).toBe(false);
    const [b] = await h.database.sql<
      { status: string; reason: string }[]
    >`select status, reason from batches where job_id = 'batch_gateway_a'`;
    expect(b).toMatchObject({ status: 'submitted', reason: expect.stringContaining('gateway-forbidden') });
    expect(await holds()).toEqual([]);
  });
});

describe('a 403 from a gateway, and /me refused too', () => {
  it('on a sync: the key is held as unauthorized (exit 3), nothing marked forbidden', async () => {
    // a gateway in front of the API refuses this key on every request
    h.sim.script([gateway403('* /**'), gateway403('* /**'), gateway403('* /**')]);
    try {
      const report = await backfill();
      expect(report.exitCode).toBe(3);
      expect(report.syncErrors).toEqual([expect.objectContaining({ code: 'unauthorized' })]);
      expect(await lastRun()).toMatchObject({ outcome: 'refused-upstream' });
      expect((await holds()).map((x) => x.code)).toEqual(['unauthorized']);
      await nothingMarkedForbidden();
    } finally {
      h.sim.clearScript();
      await clearHolds(h.database.sql, h.api.keyFingerprint);
    }
  });

  it('on a batch poll: polls are held on the key', async () => {
    await insertSubmittedBatch(h.database.sql, {
      jobId: 'batch_gateway_b',
      sourceId: null,
      kind: 'video',
      lang: null,
      mode: 'batch',
      creditsEstimated: 2,
      request: { videoIds: ['v'] },
      textOnly: false,
      replayOf: null,
      firstPollDelayMs: 60_000,
    });
    h.sim.script([gateway403('GET /videosite/batch/batch_gateway_b'), gateway403('GET /me')]);
    try {
      expect((await pollBatch(h.deps, 'batch_gateway_b')).terminal).toBe(false);
      expect((await holds()).map((x) => x.code)).toEqual(['unauthorized']);
      const [b] = await h.database.sql<
        { status: string; reason: string }[]
      >`select status, reason from batches where job_id = 'batch_gateway_b'`;
      expect(b).toMatchObject({ status: 'submitted', reason: expect.stringContaining('polls held') });
    } finally {
      h.sim.clearScript();
      await clearHolds(h.database.sql, h.api.keyFingerprint);
    }
  });

  it('at sources add: exit 3 naming the refused key, nothing registered', async () => {
    h.sim.script([gateway403('GET /videosite/playlist'), gateway403('GET /me')]);
    try {
      const count = async () => (await h.database.sql<{ n: number }[]>`select count(*)::int as n from sources`)[0]!.n;
      const before = await count();
      const r = await runCli(
        ['sources', 'add', 'playlist', h.sim.catalog.channels()[0]!.playlistIds[0]!],
        h.env,
        60_000,
      );
      expectCleanError(r, 3, 'GET /me refused the key too');
      expect(await count()).toBe(before);
    } finally {
      h.sim.clearScript();
    }
  });
});
