/**
 * What a fault scenario judges at the end, read straight from the scenario's Postgres: the
 * rows a user would count, and every item of every batch accounted for.
 */
import type { Simulator } from '../../src/simulator/server.ts';
import type { FaultRig } from './fault-rig.ts';
import { waitUntil } from './proc.ts';

export interface Settled {
  /** rows in `videos` / `transcripts` */
  videos: number;
  transcripts: number;
  /** batches recorded, by status */
  batches: number;
  statuses: Record<string, number>;
  /** items recorded, and those not in a final state (processing, landed) */
  items: number;
  unsettledItems: number;
  itemStates: Record<string, number>;
  /** a video in two batches of the same kind and language (paid twice) */
  duplicateItems: number;
}

export async function ledger(rig: FaultRig): Promise<Settled> {
  const { sql } = rig.db();
  const [v] = await sql<{ n: number }[]>`select count(*)::int as n from videos`;
  const [t] = await sql<{ n: number }[]>`select count(*)::int as n from transcripts`;
  const statuses: Record<string, number> = {};
  let batches = 0;
  for (const r of await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from batches group by status`) {
    statuses[r.status] = r.n;
    batches += r.n;
  }
  const itemStates: Record<string, number> = {};
  let items = 0;
  for (const r of await sql<{ state: string; n: number }[]>`select state, count(*)::int as n from batch_items group by state`) {
    itemStates[r.state] = r.n;
    items += r.n;
  }
  const [dup] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select i.video_id from batch_items i join batches b using (job_id)
      where b.replay_of is null
      group by i.video_id, b.kind, coalesce(b.lang, '') having count(*) > 1) d`;
  return {
    videos: v!.n,
    transcripts: t!.n,
    batches,
    statuses,
    items,
    unsettledItems: (itemStates.processing ?? 0) + (itemStates.landed ?? 0),
    itemStates,
    duplicateItems: dup!.n,
  };
}

/** Wait until every batch is terminal and nothing is left landed-but-not-sunk; then the ledger. */
export async function settle(rig: FaultRig, _sourceIds: number[], timeoutMs: number): Promise<Settled> {
  const { sql } = rig.db();
  await waitUntil(async () => {
    const [r] = await sql<{ open: number; landed: number; total: number }[]>`
      select
        (select count(*)::int from batches where status in ('submitted', 'queued', 'active')) as open,
        (select count(*)::int from batch_items where state in ('landed', 'processing')) as landed,
        (select count(*)::int from batches) as total`;
    return r!.total > 0 && r!.open === 0 && r!.landed === 0 ? true : undefined;
  }, timeoutMs, 'every batch to finish and every landed item to be stored', 250);
  return ledger(rig);
}

/** Transcript rows a channel should end with: its public videos that have any transcript. */
export function expectedTranscripts(sim: Simulator, channelId: string): number {
  return sim.catalog
    .videoIds(channelId)!
    .map((id) => sim.catalog.videoInfo(id)!)
    .filter((i) => i.fate === 'public' && i.transcriptLanguages.length > 0).length;
}
