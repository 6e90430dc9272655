/**
 * Scenario 7: replaying a completed batch (`replay --batch`) re-runs its database writes from the
 * stored raw items. Upserts write only what changed, so a replay of unchanged data changes no
 * row, no `updated_at`, and makes no API call.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('07-replay', { sim: { catalog: { channels: 1, channelSizes: [300] } } });
});
afterAll(async () => {
  await rig?.close();
});

interface RowPrint {
  k: string;
  updated_at: string;
  h: string;
}

async function fingerprint(): Promise<Map<string, RowPrint>> {
  const { sql } = rig.db();
  const rows = await sql<RowPrint[]>`
    select 'v:' || id as k, updated_at::text, md5(v::text) as h from videos v
    union all
    select 't:' || video_id || ':' || lang as k, updated_at::text, md5(t::text) as h from transcripts t`;
  return new Map(rows.map((r) => [r.k, r]));
}

it('07 replay --batch of a completed batch: 0 rows changed, 0 updated_at changed, 0 API calls', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id, langs: ['en'] });
  const backfill = await rig.run(['backfill', '--source', String(source.id), '--timeout', '120s']);
  expect(backfill.code, backfill.stdout + backfill.stderr).toBe(0);

  const { sql } = rig.db();
  const batches = await sql<{ job_id: string; sunk: number }[]>`
    select b.job_id, count(i.*) filter (where i.state = 'sunk')::int as sunk
    from batches b join batch_items i using (job_id) where b.status = 'completed' group by b.job_id order by b.job_id`;
  expect(batches).toHaveLength(2);
  const before = await fingerprint();
  expect(before.size).toBeGreaterThan(300);
  const callsBefore = rig.sim.stats().total;

  let resunk = 0;
  for (const b of batches) {
    const r = await rig.run(['replay', '--batch', b.job_id]);
    expect(r.code, r.stderr).toBe(0);
    const m = /(\d+) stored item\(s\) re-sunk from raw: (\d+) row\(s\) inserted, (\d+) updated, (\d+) unchanged/.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    expect(Number(m![1])).toBe(b.sunk);
    expect([Number(m![2]), Number(m![3])]).toEqual([0, 0]);
    resunk += Number(m![1]);
  }

  const after = await fingerprint();
  let changed = 0;
  let updatedAtChanged = 0;
  for (const [k, r] of before) {
    const a = after.get(k);
    if (!a || a.h !== r.h) changed++;
    if (!a || a.updated_at !== r.updated_at) updatedAtChanged++;
  }
  changed += Math.max(0, after.size - before.size);
  const calls = rig.sim.stats().total - callsBefore;
  const [notSunk] = await sql<{ n: number }[]>`select count(*)::int as n from batch_items where state = 'landed'`;
  figures('07 replay-batch', { rows_changed: changed, updated_at_changed: updatedAtChanged, api_calls: calls, items_resunk: resunk });
  expect(changed).toBe(0);
  expect(updatedAtChanged).toBe(0);
  expect(calls).toBe(0);
  expect(notSunk!.n).toBe(0);
});
