/**
 * Scenario 35: the embeddings provider fails under a running daemon (issue #32).
 *
 * 35a: the provider (the embeddings twin, over real HTTP) is down for a minute while a daemon's
 * embedder has passages to embed: nothing listens, every request is refused. When it is back the
 * embedder resumes by itself: every passage text gets its vector, and no text is paid for twice.
 *
 * 35b: the daemon is SIGKILLed while a batch of embeddings is in flight (the twin answers slowly,
 * so the kill lands inside a request). A new daemon takes the dead one's texts once their claims
 * lapse (EMBEDDINGS_TIMEOUT_MS plus a margin) and embeds them: nothing is lost, and what is paid
 * twice is at most the batch the dead daemon had in flight (its answer, billed, never stored).
 *
 * How it fails when the property breaks: a text left without a vector shows as `missing` > 0 (the
 * wait times out); a text embedded again after the outage shows as `repeated` > 0 (35a) or more
 * than one batch (35b); a daemon that crashes on the outage shows as its exit.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmbeddingsTwin, type EmbeddingsTwin } from '../../src/embeddings/twin.ts';
import { countOf, figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { killAll, waitUntil, type CliProcess } from '../helpers/proc.ts';

/** Inputs per embeddings request: the most a killed batch can cost twice. */
const BATCH = 8;
/** Requests in flight per daemon: a kill lands inside each of them, so each batch may be paid twice. */
const CONCURRENCY = 4;
/** Small passages: the simulator's transcripts are short, and the scenario wants many texts. */
const PASSAGE_ENV = { PASSAGE_TOKENS: '48', PASSAGE_OVERLAP_TOKENS: '8' };
/** A request of the killed daemon lapses this long (plus the embedder's margin) after it was sent. */
const TIMEOUT_MS = 5_000;
const OUTAGE_MS = 60_000;
/** The model of each scenario: one rig, two corpora of vectors that do not share texts. */
const MODEL_A = 'fault-embed-a';
const MODEL_B = 'fault-embed-b';

let rig: FaultRig;
let sourceId: number;
const procs: CliProcess[] = [];

const embeddingsEnv = (twin: EmbeddingsTwin, model: string): Record<string, string> => ({
  ...PASSAGE_ENV,
  EMBEDDINGS_BASE_URL: twin.baseUrl,
  EMBEDDINGS_MODEL: model,
  EMBEDDINGS_API_KEY: 'sk-fault-embeddings-0123456789',
  EMBEDDINGS_BATCH_SIZE: String(BATCH),
  EMBEDDINGS_CONCURRENCY: String(CONCURRENCY),
  EMBEDDINGS_TIMEOUT_MS: String(TIMEOUT_MS),
});

/** Passage texts without a vector of `model`. */
const missing = (model: string) =>
  countOf(rig.db().sql`
    select count(distinct p.sha256)::int as n from passages p
    where not exists (select 1 from embeddings e where e.model = ${model} and e.sha256 = p.sha256)`);
const texts = () => countOf(rig.db().sql`select count(distinct sha256)::int as n from passages`);

beforeAll(async () => {
  rig = await startFaultRig('35-embeddings', {
    sim: {
      catalog: { channels: 1, channelSizes: [40], privateShare: 0, goneShare: 0 },
      jobs: { queuedMs: 100, itemsPerSecond: 2000 },
    },
  });
  const channel = rig.sim.catalog.channels()[0]!;
  const ids = publicVideoIds(rig.sim, channel.id).slice(0, 30);
  const s = await rig.addSource({
    kind: 'videos',
    ref: ids[0]!,
    limit: undefined,
    refs: ids.map((value, i) => ({ value, where: `argument ${i + 1}` })),
  });
  sourceId = s.id;
  // the corpus first, without embeddings: every scenario embeds the same passages
  const first = await rig.run(['backfill', '--source', String(sourceId)], PASSAGE_ENV, 180_000);
  expect(first.code, first.stderr).toBe(0);
  expect(await texts()).toBeGreaterThan(BATCH * 3);
}, 240_000);

afterAll(async () => {
  await killAll(procs);
  await rig?.close();
});

it('35a: the provider down for a minute: the embedder resumes, every text embedded once', async () => {
  const twin = await startEmbeddingsTwin();
  try {
    const outage = twin.down(OUTAGE_MS);
    const t0 = Date.now();
    const daemon = rig.cli(['daemon'], embeddingsEnv(twin, MODEL_A), 'daemon-35a');
    procs.push(daemon);
    await outage;
    const backAt = Date.now();
    const all = await texts();
    // the embedder backs off up to a minute between tries, then embeds everything
    await waitUntil(async () => ((await missing(MODEL_A)) === 0 ? true : undefined), 180_000, 'every text embedded');
    const caughtUpS = (Date.now() - backAt) / 1000;
    expect(daemon.running(), daemon.stderr()).toBe(true);
    const stats = twin.stats();
    expect(stats.inputsRepeated).toBe(0);
    expect(stats.inputsAnswered).toBe(all);
    const stored = await countOf(rig.db().sql`select count(*)::int as n from embeddings where model = ${MODEL_A}`);
    expect(stored).toBe(all);
    daemon.kill('SIGTERM');
    await waitUntil(() => (daemon.running() ? undefined : true), 30_000, 'the daemon to stop');
    figures('35a embeddings-provider-down', {
      outage_s: OUTAGE_MS / 1000,
      texts: all,
      embedded: stored,
      repeated: stats.inputsRepeated,
      caught_up_after_s: Math.round(caughtUpS * 10) / 10,
      total_s: Math.round((Date.now() - t0) / 100) / 10,
    });
  } finally {
    await twin.close();
  }
}, 300_000);

it('35b: a daemon killed mid-batch: its texts embedded by the next one, at most the batches in flight paid twice', async () => {
  // each answer takes 2 s: a kill right after a request arrives lands inside it
  const twin = await startEmbeddingsTwin({ latencyMs: 2_000 });
  try {
    const env = embeddingsEnv(twin, MODEL_B);
    const first = rig.cli(['daemon'], env, 'daemon-35b-1');
    procs.push(first);
    // a few requests answered, then one in flight
    await waitUntil(() => (twin.stats().requests >= 3 ? true : undefined), 120_000, 'three embeddings requests');
    first.kill('SIGKILL');
    await waitUntil(() => (first.running() ? undefined : true), 30_000, 'the killed daemon to go');
    const killedAt = Date.now();
    const left = await missing(MODEL_B);
    expect(left).toBeGreaterThan(0);

    const second = rig.cli(['daemon'], env, 'daemon-35b-2');
    procs.push(second);
    await waitUntil(async () => ((await missing(MODEL_B)) === 0 ? true : undefined), 180_000, 'every text embedded');
    const doneS = (Date.now() - killedAt) / 1000;
    expect(second.running(), second.stderr()).toBe(true);
    const stats = twin.stats();
    const all = await texts();
    expect(stats.inputsRepeated).toBeLessThanOrEqual(BATCH * CONCURRENCY);
    expect(stats.inputsAnswered - stats.inputsRepeated).toBe(all);
    second.kill('SIGTERM');
    await waitUntil(() => (second.running() ? undefined : true), 30_000, 'the daemon to stop');
    figures('35b embeddings-daemon-killed', {
      texts: all,
      left_by_the_kill: left,
      repeated: stats.inputsRepeated,
      batch: BATCH,
      concurrency: CONCURRENCY,
      all_embedded_after_s: Math.round(doneS * 10) / 10,
    });
  } finally {
    await twin.close();
  }
}, 300_000);
