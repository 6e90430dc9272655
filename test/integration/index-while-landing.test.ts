/**
 * A process whose user waits until what it stored is indexed (backfill) starts its workers with
 * `indexWhileLanding`: its search indexer cuts passages while a batch is still in flight, where a
 * daemon's defers them (SEARCH_INDEX_DEFER_WHILE_LANDING_MS) to leave the CPU to the landings.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { transcriptRowFromApi, upsertTranscripts } from '../../src/db/transcripts.ts';
import { SEARCH_INDEX_DEFER_WHILE_LANDING_MS } from '../../src/pipeline/services/search-index.ts';
import { startWorkers, type WorkerSet } from '../../src/pipeline/services/workers.ts';
import { createPipelineHarness, waitFor, type PipelineHarness } from '../helpers/pipeline.ts';

let h: PipelineHarness;
const started: WorkerSet[] = [];

beforeAll(async () => {
  h = await createPipelineHarness('index-while-landing');
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(started.map((w) => w.close(2_000)));
  await h?.close();
});

const passagesOf = async (videoId: string): Promise<number> => {
  const [r] = await h.database.sql<{ n: number }[]>`
    select count(*)::int as n from passages where kind = 'transcript' and doc = ${videoId}`;
  return r!.n;
};

it('with indexWhileLanding, the indexer cuts what is stored while a batch is in flight', async () => {
  await h.database.sql`
    insert into batches (job_id, kind, status, credits_estimated, request)
    values ('job-in-flight', 'transcript', 'active', 2, ${h.database.sql.json({ videoIds: ['vidNow'] })})`;
  const row = transcriptRowFromApi(
    'vidNow',
    { content: [{ text: 'the pangolin curls up', offset: 0, duration: 2_000 }], lang: 'en', availableLangs: ['en'] },
    'job-in-flight',
  );
  await upsertTranscripts(h.database.sql, [row]);
  const stored = Date.now();
  started.push(startWorkers(h.deps, { roles: ['sink'], connection: h.redis, indexWhileLanding: true }));
  // well within the deferral a daemon's indexer keeps while the batch is in flight
  await waitFor(
    async () => ((await passagesOf('vidNow')) > 0 ? true : undefined),
    SEARCH_INDEX_DEFER_WHILE_LANDING_MS / 2,
    'the passages of vidNow',
  );
  expect(Date.now() - stored).toBeLessThan(SEARCH_INDEX_DEFER_WHILE_LANDING_MS);
  const [b] = await h.database.sql<{ status: string }[]>`select status from batches where job_id = 'job-in-flight'`;
  expect(b!.status).toBe('active');
}, 60_000);
