/** What `status` and the overview show of retention: the latest `prune_runs` row that was not a dry run. */
import type { Queryable } from './connection.ts';
import type { PruneRun } from './schema.ts';

export type PruneRunSummary = Pick<PruneRun, 'id' | 'startedAt' | 'finishedAt' | 'trigger' | 'freed' | 'error'>;

/** The latest prune that could free anything (running, finished or failed), or undefined before the first. */
export async function latestPruneRun(sql: Queryable): Promise<PruneRunSummary | undefined> {
  const [row] = await sql<PruneRunSummary[]>`
    select id::float8 as id, started_at as "startedAt", finished_at as "finishedAt", trigger, freed, error
    from prune_runs where not dry_run
    order by started_at desc, id desc limit 1`;
  return row;
}
