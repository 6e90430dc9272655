/**
 * Scenario 34: translations the source's minute budget has no room for.
 *
 * 34a: every due translation is longer than `--max-translate-minutes`: each is recorded as refused
 * (why, in `translations`, a `translation.refused` event once, and `status`), no translate request
 * is sent and the simulator charges nothing; a second backfill records no second event and still
 * spends nothing.
 *
 * 34b: the budget raised: what now fits is bought (once), its refusal cleared; what still does not
 * fit stays refused, unbought.
 *
 * How it fails when the property breaks: a translation sent past the budget shows as a translate
 * request and credits charged (`requests`, `charged`); a refusal not recorded shows as no row or
 * no event (`refused`, `events`); a refusal recorded at every sync shows as more events.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { countOf, figures, publicVideoIds, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';

const TRANSLATE = 'GET /videosite/transcript/translate';

let rig: FaultRig;
let sourceId: number;
/** 10, 15 and 2 minutes long, each with one English transcript */
let tenMin: string;
let fifteenMin: string;
let twoMin: string;

beforeAll(async () => {
  rig = await startFaultRig('34-translation-budget', {
    sim: {
      catalog: { channels: 1, channelSizes: [10], privateShare: 0, goneShare: 0 },
      jobs: { queuedMs: 100, itemsPerSecond: 2000, translateMs: 100 },
    },
  });
  const channel = rig.sim.catalog.channels()[0]!;
  [tenMin, fifteenMin, twoMin] = publicVideoIds(rig.sim, channel.id).slice(0, 3) as [string, string, string];
  for (const [id, durationS] of [
    [tenMin, 600],
    [fifteenMin, 900],
    [twoMin, 120],
  ] as const) {
    rig.sim.catalog.editVideo(id, { durationS, transcriptLanguages: ['en'] });
  }
  const s = await rig.addSource({
    kind: 'videos',
    ref: tenMin,
    limit: undefined,
    refs: [tenMin, fifteenMin, twoMin].map((value, i) => ({ value, where: `argument ${i + 1}` })),
  });
  sourceId = s.id;
  const first = await rig.run(['backfill', '--source', String(sourceId)], {}, 120_000);
  expect(first.code, first.stderr).toBe(0);
});

afterAll(async () => {
  await rig?.close();
});

const refusedRows = () =>
  rig.db().sql<{ video_id: string; detail: string | null }[]>`
    select video_id, detail from translations where source_id = ${sourceId} and state = 'refused-budget' order by video_id`;
const refusedEvents = () =>
  countOf(rig.db().sql`
    select count(*)::int as n from events where type = 'translation.refused' and source_id = ${sourceId}`);

it('34a: every translation past the budget is recorded as refused and nothing is spent', async () => {
  const edit = await rig.run([
    'sources',
    'edit',
    String(sourceId),
    '--translate',
    'de',
    '--max-translate-minutes',
    '1',
  ]);
  expect(edit.code, edit.stderr).toBe(0);

  const requestsBefore = requestsTo(rig.sim, TRANSLATE);
  const chargedBefore = rig.sim.stats().creditsCharged;
  const run = await rig.run(['backfill', '--source', String(sourceId)], {}, 120_000);
  expect(run.code, run.stderr).toBe(0);
  const requests = requestsTo(rig.sim, TRANSLATE) - requestsBefore;
  const charged = rig.sim.stats().creditsCharged - chargedBefore;
  expect(requests).toBe(0);
  expect(charged).toBe(0);

  const refused = await refusedRows();
  expect(refused.map((r) => r.video_id).sort()).toEqual([tenMin, fifteenMin, twoMin].sort());
  for (const r of refused) expect(r.detail).toContain('--max-translate-minutes 1');
  expect(await refusedEvents()).toBe(3);
  const [stored] = await rig.db().sql<{ n: number }[]>`
    select count(*)::int as n from transcripts where origin = 'translation'`;
  expect(stored!.n).toBe(0);

  const status = await rig.run(['status'], {}, 60_000);
  expect(status.code, status.stderr).toBe(0);
  expect(status.stdout).toContain(
    `source ${sourceId} into de: 0 stored, 3 due, 3 refused by the budget (0 of 1 min used)`,
  );
  expect(status.stdout).toContain(`refused ${twoMin} de (2 min`);

  // asked again: recorded once, still nothing spent
  const again = await rig.run(['backfill', '--source', String(sourceId)], {}, 120_000);
  expect(again.code, again.stderr).toBe(0);
  expect(requestsTo(rig.sim, TRANSLATE) - requestsBefore).toBe(0);
  expect(rig.sim.stats().creditsCharged - chargedBefore).toBe(0);
  expect(await refusedEvents()).toBe(3);
  figures('34a translation-over-budget', { requests, charged, refused: refused.length, events: await refusedEvents() });
});

it('34b: the budget raised: what fits is bought once, the rest stays refused', async () => {
  // 2 + 10 minutes fit in 12; the 15-minute one does not
  const edit = await rig.run(['sources', 'edit', String(sourceId), '--max-translate-minutes', '12']);
  expect(edit.code, edit.stderr).toBe(0);
  const requestsBefore = requestsTo(rig.sim, TRANSLATE);
  const chargedBefore = rig.sim.stats().creditsCharged;
  const run = await rig.run(['backfill', '--source', String(sourceId)], {}, 120_000);
  expect(run.code, run.stderr).toBe(0);
  const requests = requestsTo(rig.sim, TRANSLATE) - requestsBefore;
  expect(requests).toBe(2);
  const translated = await rig.db().sql<{ video_id: string }[]>`
    select video_id from transcripts where origin = 'translation' order by video_id`;
  expect(translated.map((t) => t.video_id).sort()).toEqual([tenMin, twoMin].sort());
  expect((await refusedRows()).map((r) => r.video_id)).toEqual([fifteenMin]);
  // billed as the answers said: the charges recorded are what the simulator charged
  const charged = rig.sim.stats().creditsCharged - chargedBefore;
  const billed = await countOf(rig.db().sql`
    select coalesce(sum(credits), 0)::int as n from credit_charges where endpoint = ${TRANSLATE}`);
  expect(billed).toBe(charged);
  expect(charged).toBeGreaterThan(0);
  figures('34b translation-budget-raised', { requests, charged, still_refused: 1 });
});
