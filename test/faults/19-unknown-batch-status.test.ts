/**
 * Scenario 19: a batch head whose status this interface version does not list (`cancelled`).
 *
 * - Unknown for a while, with some items already carrying results, then `completed`: the
 *   results land and are stored while the status is unknown (checked before the completion is
 *   let through), `batches.upstream_status` records what was said, the batch then completes,
 *   and nothing is bought again over three more syncs.
 * - Unknown for good: with BATCH_MAX_AGE_MS=5000 the batch is expired locally (`max-age`), its
 *   unfinished items become retryable and are re-submitted once by the next sync, which is not
 *   held back by the batch (the source's one-batch-in-flight rule no longer applies to it).
 *
 * The batch POSTs and polls are scripted (the simulator's real endpoints answer the scripted
 * bodies); transcript batches are the simulator's own.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { moreSyncs, postsPerVideo, postsPerVideoMax } from '../helpers/posts.ts';
import { waitUntil } from '../helpers/proc.ts';

const IN_FLIGHT = ['submitted', 'queued', 'active'];
/** Enough scripted answers to keep a batch's status unknown for minutes (about one poll a second). */
const UNKNOWN_POLLS = 300;

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('19-unknown-status', {
    sim: {
      catalog: {
        channels: 2,
        channelSizes: [8, 8],
        privateShare: 0,
        goneShare: 0,
        noTranscriptShare: 0,
        transcriptChunks: { min: 2, max: 4 },
      },
    },
  });
});
afterAll(async () => {
  await rig?.close();
});

const video = (id: string) => rig.sim.catalog.video(id)!;
const result = (id: string) => JSON.stringify({ videoId: id, video: video(id), errorCode: null });
const unfinished = (id: string) => `{"videoId":${JSON.stringify(id)},"video":null,"errorCode":"processing"}`;
const answer = (status: string, items: string[], done: number) =>
  `{"status":"${status}","results":[${items.join(',')}],"stats":{"total":${items.length},"succeeded":${done},"failed":0}` +
  (status === 'completed' ? ',"completedAt":"2026-01-01T00:00:00.000Z"' : '') +
  '}';

it('19a unknown status with results, then completed: results land meanwhile, the batch completes, nothing re-bought', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const [a, b, c, d] = rig.sim.catalog.videoIds(ch.id)!.slice(0, 4) as [string, string, string, string];
  const JOB = 'batch_scripted_unknown_then_completed';
  rig.sim.script([
    { match: 'POST /videosite/video/batch', status: 200, body: { jobId: JOB } },
    {
      match: `GET /videosite/batch/${JOB}`,
      status: 200,
      body: answer('cancelled', [result(a), result(b), unfinished(c), unfinished(d)], 2),
    },
    ...Array.from({ length: UNKNOWN_POLLS }, () => ({
      match: `GET /videosite/batch/${JOB}`,
      status: 200,
      body: answer('cancelled', [result(a), result(b), result(c), unfinished(d)], 3),
    })),
  ]);
  const source = await rig.addSource({ ref: ch.id, limit: 4, langs: [] });
  const { sql } = rig.db();
  const backfill = rig.cli(['backfill', '--source', String(source.id), '--timeout', '90s'], {}, 'backfill-unknown');

  // while the head still says `cancelled`: the three results are stored
  const during = await waitUntil(
    async () => {
      const [r] = await sql<
        {
          status: string;
          upstream_status: string | null;
          polls: number;
          landed: number;
          stored: number;
          processing: number;
        }[]
      >`
      select b.status, b.upstream_status, b.polls,
        (select count(*)::int from batch_items i where i.job_id = b.job_id and i.state in ('landed', 'sunk')) as landed,
        (select count(*)::int from batch_items i where i.job_id = b.job_id and i.state = 'processing') as processing,
        (select count(*)::int from videos v where v.id = any(${[a, b, c]}::text[])) as stored
      from batches b where b.job_id = ${JOB}`;
      return r && r.stored === 3 && r.polls >= 3 ? r : undefined;
    },
    60_000,
    'results stored while the batch status is unknown',
    200,
  );
  // now let the upstream finish the batch (both calls in one tick: no poll falls in between)
  rig.sim.clearScript();
  rig.sim.script([
    {
      match: `GET /videosite/batch/${JOB}`,
      status: 200,
      body: answer('completed', [result(a), result(b), result(c), result(d)], 4),
    },
  ]);
  const ended = await backfill.exited;
  expect(ended.code, backfill.stdout() + backfill.stderr().slice(-3000)).toBe(0);

  const [after] = await sql<{ status: string; upstream_status: string | null; polls: number; sunk: number }[]>`
    select b.status, b.upstream_status, b.polls,
      (select count(*)::int from batch_items i where i.job_id = b.job_id and i.state = 'sunk') as sunk
    from batches b where b.job_id = ${JOB}`;
  const codes = await moreSyncs(rig, [source.id], 3);
  const videoPosts = postsPerVideo(rig.sim, 'video');

  figures('19a unknown-status-then-completed', {
    polls_unknown: during.polls,
    landed_while_unknown: during.landed,
    stored_while_unknown: during.stored,
    upstream_status: during.upstream_status ?? 'null',
    final_status: after!.status,
    items_sunk: after!.sunk,
    posts_per_video_max: postsPerVideoMax(rig.sim),
  });
  expect(IN_FLIGHT).toContain(during.status);
  expect(during.upstream_status).toBe('cancelled');
  expect(during.landed).toBe(3);
  expect(during.processing).toBe(1);
  expect(after).toMatchObject({ status: 'completed', upstream_status: 'completed', sunk: 4 });
  expect(codes).toEqual([0, 0, 0]);
  for (const id of [a, b, c, d]) expect(videoPosts.get(id), id).toBe(1);
  expect(postsPerVideoMax(rig.sim)).toBe(1);
});

it('19b unknown status for good: expired locally at BATCH_MAX_AGE_MS, unfinished items re-submitted once, the source not blocked', async () => {
  const ch = rig.sim.catalog.channels()[1]!;
  const [g, h, i, j] = rig.sim.catalog.videoIds(ch.id)!.slice(0, 4) as [string, string, string, string];
  const JOB = 'batch_scripted_unknown_forever';
  const env = { BATCH_MAX_AGE_MS: '5000', RETRY_BACKOFF_BASE_MS: '0' };
  rig.sim.script([
    { match: 'POST /videosite/video/batch', status: 200, body: { jobId: JOB } },
    ...Array.from({ length: UNKNOWN_POLLS }, () => ({
      match: `GET /videosite/batch/${JOB}`,
      status: 200,
      body: answer('cancelled', [result(g), unfinished(h), unfinished(i), unfinished(j)], 1),
    })),
  ]);
  const source = await rig.addSource({ ref: ch.id, limit: 4, langs: [] });
  const first = await rig.run(['backfill', '--source', String(source.id), '--timeout', '60s'], env);
  // the batch expired (locally): not everything landed
  expect(first.code, first.stdout + first.stderr).toBe(1);
  rig.sim.clearScript();

  const { sql } = rig.db();
  const [expired] = await sql<
    { status: string; error_code: string | null; upstream_status: string | null; polls: number; age_s: number }[]
  >`
    select status, error_code, upstream_status, polls,
      extract(epoch from terminal_at - submitted_at)::float8 as age_s
    from batches where job_id = ${JOB}`;
  const items = await sql<{ video_id: string; state: string; error_code: string | null }[]>`
    select video_id, state, error_code from batch_items where job_id = ${JOB}`;
  items.sort((x, y) => (x.video_id < y.video_id ? -1 : 1));

  const codes = await moreSyncs(rig, [source.id], 3, env);
  const later = await sql<{ job_id: string; status: string; ids: string[] }[]>`
    select job_id, status, array(select jsonb_array_elements_text(request->'videoIds')) as ids
    from batches where source_id = ${source.id} and kind = 'video' and job_id <> ${JOB} order by submitted_at`;
  const stored = (await sql<{ id: string }[]>`select id from videos where id = any(${[g, h, i, j]}::text[])`)
    .map((v) => v.id)
    .sort();
  const videoPosts = postsPerVideo(rig.sim, 'video');

  figures('19b unknown-status-forever', {
    polls_unknown: expired!.polls,
    expired_after_s: expired!.age_s,
    error_code: expired!.error_code ?? 'null',
    retryable: items.filter((x) => x.state === 'retryable').length,
    resubmitted_batches: later.length,
    posts_per_video_max: postsPerVideoMax(rig.sim),
    cap: 3,
  });
  expect(expired).toMatchObject({ status: 'expired', error_code: 'max-age', upstream_status: 'cancelled' });
  expect(expired!.polls).toBeGreaterThanOrEqual(2);
  // the result that arrived is kept; the unfinished ones are retryable
  expect(items).toEqual(
    [
      { video_id: g, state: 'sunk', error_code: null },
      ...[h, i, j].map((id) => ({ video_id: id, state: 'retryable', error_code: 'processing' })),
    ].sort((x, y) => (x.video_id < y.video_id ? -1 : 1)),
  );
  // the next sync submits (the expired batch holds nothing back) exactly the unfinished videos
  expect(later).toHaveLength(1);
  expect(later[0]?.status).toBe('completed');
  expect([...(later[0]?.ids ?? [])].sort()).toEqual([h, i, j].sort());
  expect(codes).toEqual([0, 0, 0]);
  expect(stored).toEqual([g, h, i, j].sort());
  expect(videoPosts.get(g)).toBe(1);
  for (const id of [h, i, j]) expect(videoPosts.get(id), id).toBe(2);
  expect(postsPerVideoMax(rig.sim)).toBeLessThanOrEqual(3);
});
