/**
 * `backfill` with EMBEDDINGS_* set returns with what it stored found by meaning (issue #32), as it
 * returns with it found by its words: every passage text it cut has a vector of the model, and
 * stderr says how many were embedded; a second backfill of unchanged content embeds none. A
 * provider that keeps failing does not change the exit status (the rows landed) and is named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddingsTwin, type EmbeddingsTwin } from '../../src/embeddings/twin.ts';
import { expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type PipelineHarness } from '../helpers/pipeline.ts';

const MODEL = 'backfill-embed';

let h: PipelineHarness;
let twin: EmbeddingsTwin;

beforeAll(async () => {
  h = await createPipelineHarness('embeddings_backfill', {
    catalog: { channels: 1, channelSizes: [8], privateShare: 0, goneShare: 0 },
    jobs: { queuedMs: 100, itemsPerSecond: 2000 },
  });
  twin = await startEmbeddingsTwin({ port: 0 });
});

afterAll(async () => {
  await twin?.close();
  await h?.close();
});

const env = (baseUrl: string) => ({
  ...h.env,
  EMBEDDINGS_BASE_URL: baseUrl,
  EMBEDDINGS_MODEL: MODEL,
  EMBEDDINGS_BATCH_SIZE: '4',
  PASSAGE_TOKENS: '48',
  PASSAGE_OVERLAP_TOKENS: '8',
});
const missing = async () => {
  const [r] = await h.database.sql<{ n: number }[]>`
    select count(distinct p.sha256)::int as n from passages p
    where not exists (select 1 from embeddings e where e.model = ${MODEL} and e.sha256 = p.sha256)`;
  return r!.n;
};

describe('backfill with embeddings configured', () => {
  let sourceId: number;

  it('returns with every passage text it cut embedded, and says how many', async () => {
    const channel = h.sim.catalog.channels()[0]!;
    const add = await runCli(['sources', 'add', 'channel', channel.id], h.env, 60_000);
    expectExit(add, 0);
    sourceId = Number(/^source (\d+) added/.exec(add.stdout)![1]);
    const r = await runCli(['backfill', '--source', String(sourceId), '--timeout', '90s'], env(twin.baseUrl), 120_000);
    expectExit(r, 0);
    const [texts] = await h.database.sql<{ n: number }[]>`select count(distinct sha256)::int as n from passages`;
    expect(texts!.n).toBeGreaterThan(4);
    expect(await missing()).toBe(0);
    expect(twin.stats().inputsAnswered).toBe(texts!.n);
    // the backfill's own embedder may have embedded some while batches landed: the drain says the rest
    expect(r.stderr).toMatch(/embeddings: \d+ passage text\(s\) embedded\n/);
  }, 150_000);

  it('a second backfill of unchanged content embeds none', async () => {
    const before = twin.stats().inputsAnswered;
    const r = await runCli(['backfill', '--source', String(sourceId), '--timeout', '90s'], env(twin.baseUrl), 120_000);
    expectExit(r, 0);
    expect(twin.stats().inputsAnswered).toBe(before);
    expect(r.stderr).toContain('embeddings: 0 passage text(s) embedded');
  }, 150_000);

  it('a provider that keeps failing is named; the exit status stays what the landing made it', async () => {
    // texts to embed again: a model of their own
    const down = await startEmbeddingsTwin({ port: 0 });
    await down.close();
    const r = await runCli(
      ['backfill', '--source', String(sourceId), '--timeout', '90s'],
      { ...env(down.baseUrl), EMBEDDINGS_MODEL: `${MODEL}-other` },
      150_000,
    );
    expectExit(r, 0);
    expect(r.stderr).toContain(
      'embeddings: 0 passage text(s) embedded; stopped: the embeddings provider keeps failing',
    );
  }, 180_000);
});
