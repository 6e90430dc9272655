/**
 * The CLI as a real process, for the commands that move data and spend credits: `backfill`,
 * `status`, `replay`. No worker runs in this test process: every poll and sink is done by the CLI
 * process under test, so the simulator's request counts and credits are the CLI's alone. Each
 * describe block has a harness of its own (simulator, database, queue prefix), so no block sees
 * another's sources, batches or credits; inside a block, every test runs the steps it needs (a
 * backfill several tests read is run once, by whichever of them comes first), in any order.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/pipeline/read/status.ts';
import type { Source } from '../../src/db/schema.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { expectCleanError, expectExit, output } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';
import { parseLogLines } from '../helpers/proc.ts';
import { once } from '../helpers/once.ts';

/** The harness of the describe block that is running (blocks run one after the other). */
let h: PipelineHarness;

/** A harness of its own for the enclosing describe block: set before its first test, closed after its last. */
function ownHarness(label: string): void {
  beforeAll(async () => {
    h = await createPipelineHarness(`cli-backfill-${label}`, {
      catalog: { channels: 4, channelSizes: [30, 20, 20, 20] },
    });
  });
  afterAll(async () => {
    await h?.close();
  });
}

/** Job settings of the harness (fast items, a long lifetime), restored after a test slows them. */
const NORMAL_JOBS = { itemsPerSecond: 2000, lifetimeMs: 3_600_000 };

const cli = (args: string[], env: Record<string, string> = h.env): Promise<CliResult> => runCli(args, env, 60_000);

async function usedCredits(): Promise<number> {
  return (await h.api.me()).usedCredits;
}

async function batchCount(): Promise<number> {
  const [r] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from batches`;
  return r!.n;
}

function channel(i: number) {
  return h.sim.catalog.channels()[i]!;
}

function addSource(kind: 'channel' | 'playlist', ref: string, langs: string[] = ['en']): Promise<Source> {
  return registerSource(h.deps, { kind, ref, limit: 100, langs, textOnly: false, cron: null });
}

/** The public videos among `ids`: the ones that must become rows (private and gone ones must not). */
function publicIds(ids: string[]): string[] {
  return ids.filter((id) => h.sim.catalog.videoInfo(id)!.fate === 'public');
}

async function videoIdsIn(ids: string[]): Promise<string[]> {
  const rows = await h.database.sql<{ id: string }[]>`select id from videos where id = any(${ids}::text[]) order by id`;
  return rows.map((r) => r.id);
}

describe('backfill --all, status, replay --batch', () => {
  ownHarness('all');
  let channelSource: Source;
  let playlistSource: Source;

  beforeAll(async () => {
    channelSource = await addSource('channel', channel(0).handle);
    playlistSource = await addSource('playlist', channel(1).playlistIds[0]!);
  });

  const backfillAll = once(() => cli(['backfill', '--all']));

  it('backfill --all lands every public video of every source and exits 0', async () => {
    const r = await backfillAll();
    expectExit(r, 0);
    expect(r.stdout).toMatch(new RegExp(`^source ${channelSource.id}: submitted, `, 'm'));
    expect(r.stdout).toMatch(new RegExp(`^source ${playlistSource.id}: submitted, `, 'm'));
    expect(r.stdout).toMatch(/everything landed\n$/);
    expect(r.stdout).not.toContain('not everything landed');

    const channelVideos = h.sim.catalog.videoIds(channel(0).id)!;
    expect(await videoIdsIn(channelVideos)).toEqual(publicIds(channelVideos).sort());
    const playlistVideos = h.sim.catalog.playlistVideoIds(playlistSource.externalId)!;
    expect(await videoIdsIn(playlistVideos)).toEqual(publicIds(playlistVideos).sort());
    // and the batches are all done, nothing left behind
    const open = await h.database.sql`select 1 from batch_items where state in ('landed', 'processing', 'retryable')`;
    expect(open).toHaveLength(0);
    // and what it stored is searchable when it exits (no daemon ran): every transcript has its
    // passages, none waits for the indexer
    const [index] = await h.database.sql<{ transcripts: number; indexed: number; queued: number }[]>`
      select (select count(*)::int from transcripts) as transcripts,
        (select count(distinct (doc, lang))::int from passages where kind = 'transcript') as indexed,
        (select count(*)::int from search_index_queue) as queued`;
    expect(index!.transcripts).toBeGreaterThan(0);
    expect(index).toEqual({ transcripts: index!.transcripts, indexed: index!.transcripts, queued: 0 });
  });

  it('refuses a backfill without --source or --all, an unknown source, or a bad --timeout, before any request', async () => {
    const requests = h.sim.stats().total;
    const batches = await batchCount();
    const [neither, unknown, timeout] = await Promise.all([
      cli(['backfill']),
      cli(['backfill', '--source', '999']),
      cli(['backfill', '--source', String(channelSource.id), '--timeout', 'abc']),
    ]);
    expectCleanError(neither!, 2, 'give either --source ID (one or more) or --all');
    expectCleanError(unknown!, 2, '--source: no source with ID 999');
    expectCleanError(timeout!, 2, "option '--timeout <duration>' argument 'abc' is invalid");
    expect(h.sim.stats().total).toBe(requests);
    expect(await batchCount()).toBe(batches);
  });

  it('status --json counts what Postgres holds; status shows the sources and the credits', async () => {
    expectExit(await backfillAll(), 0);
    const [json, human] = await Promise.all([cli(['status', '--json']), cli(['status'])]);
    expectExit(json, 0);
    const report = JSON.parse(json.stdout) as StatusReport;

    const byId = new Map(report.sources.map((s) => [s.id, s]));
    const channelVideos = await videoIdsIn(h.sim.catalog.videoIds(channel(0).id)!);
    const playlistVideos = await videoIdsIn(h.sim.catalog.playlistVideoIds(playlistSource.externalId)!);
    expect(channelVideos.length).toBeGreaterThan(0);
    expect(byId.get(channelSource.id)?.videos).toBe(channelVideos.length);
    expect(byId.get(playlistSource.id)?.videos).toBe(playlistVideos.length);

    // now: each video's latest outcome per kind and language; history: every item received
    const [latest] = await h.database.sql<
      { sunk: number }[]
    >`select count(*)::int as sunk from video_sync where last_state = 'sunk'`;
    const [items] = await h.database.sql<
      { sunk: number }[]
    >`select count(*)::int as sunk from batch_items where state = 'sunk'`;
    expect(report.items.sunk).toBe(latest!.sunk);
    expect(report.items.sunk).toBeGreaterThan(0);
    expect(report.history.items.sunk).toBe(items!.sunk);
    expect(typeof report.credits.usedCredits).toBe('number');
    // the last snapshot was taken by the backfill; nothing has been spent since
    expect(report.credits.usedCredits).toBe(await usedCredits());
    expect(report.inFlight).toEqual([]);

    expectExit(human, 0);
    expect(human.stdout).toContain(channelSource.title!);
    expect(human.stdout).toContain(playlistSource.title!);
    expect(human.stdout).toMatch(new RegExp(`^${channelSource.id}\\s+channel\\s+.*\\s${channelVideos.length}\\s`, 'm'));
    expect(human.stdout).toMatch(/^Credits\n {2}plan pro: \d+ of \d+ used/m);

    // the storage per table, as the catalog has it, and the latest prune (none here)
    const [size] = await h.database.sql<
      { bytes: number }[]
    >`select pg_total_relation_size('batch_items')::float8 as bytes`;
    // (autovacuum may add a map fork since, never take room away)
    const itemsBytes = report.storage.find((t) => t.table === 'batch_items')?.totalBytes;
    expect(itemsBytes).toBeGreaterThan(0);
    expect(itemsBytes).toBeLessThanOrEqual(size!.bytes);
    expect(report.storage.map((t) => t.table)).toEqual(
      expect.arrayContaining(['videos', 'transcripts', 'source_stats', 'item_counts']),
    );
    expect(report.lastPrune).toBeNull();
    expect(human.stdout).toMatch(/^Storage: \d+(\.\d)? [kMG]B in \d+ tables; the largest 5 \(every table: /m);
    expect(human.stdout).toMatch(/^batch_items\s+\d+(\.\d)? [kMG]B\s/m);
    expect(human.stdout).toMatch(/^ {2}last prune: never /m);
  });

  it('replay --batch re-sinks from the stored raw items without any API call', async () => {
    expectExit(await backfillAll(), 0);
    const [batch] = await h.database.sql<{ job_id: string; sunk: number }[]>`
      select b.job_id, count(*)::int as sunk from batches b join batch_items i using (job_id)
      where b.source_id = ${channelSource.id} and b.kind = 'transcript' and i.state = 'sunk'
      group by b.job_id`;
    expect(batch!.sunk).toBeGreaterThan(0);
    const before = await h.database.sql`select video_id, lang, updated_at from transcripts order by video_id, lang`;
    const requests = h.sim.stats().total;

    const r = await cli(['replay', '--batch', batch!.job_id]);
    expectExit(r, 0);
    expect(r.stdout).toBe(
      `batch ${batch!.job_id}: ${batch!.sunk} stored item(s) re-sunk from raw: 0 row(s) inserted, 0 updated, ` +
        `${batch!.sunk} unchanged; no API call\n`,
    );
    expect(h.sim.stats().total).toBe(requests);
    expect(await h.database.sql`select video_id, lang, updated_at from transcripts order by video_id, lang`).toEqual(
      before,
    );
  });

  it('replay --batch of an unknown job is a usage error; replay --failed with nothing retryable submits nothing', async () => {
    const requests = h.sim.stats().total;
    const [unknown, failed] = await Promise.all([cli(['replay', '--batch', 'nope']), cli(['replay', '--failed'])]);
    expectCleanError(unknown!, 2, '--batch: no batch "nope" is recorded');
    expectExit(failed!, 0);
    expect(failed!.stdout).toBe('nothing to re-submit: no retryable items\n');
    expect(h.sim.stats().total).toBe(requests);
  });
});

describe('upstream refusals exit 3', () => {
  ownHarness('refusals');
  let source: Source;

  beforeAll(async () => {
    source = await addSource('channel', channel(2).id);
  });

  it('a backfill the credits cannot pay for submits nothing and says so', async () => {
    const used = await usedCredits();
    h.sim.setAccount(h.sim.apiKey, { maxCredits: used + 5 });
    try {
      const r = await cli(['backfill', '--source', String(source.id)]);
      expectExit(r, 3);
      // the first sync lists the channel (1 credit), so its estimate is exact: a metadata batch
      // and a transcript batch, each 1 + the videos listed
      expect(r.stdout).toContain(`source ${source.id}: refused-credits`);
      const listed = Number(/(\d+) listed/.exec(r.stdout)?.[1]);
      expect(listed).toBeGreaterThan(0);
      expect(r.stdout).toContain(`not enough credits: this submission needs ${2 * (1 + listed)}, 4 are left`);
      expect(r.stdout).toContain('not everything landed (exit 3)');
      expect(await usedCredits()).toBe(used + 1);
      expect(await h.database.sql`select 1 from batches where source_id = ${source.id}`).toHaveLength(0);
    } finally {
      h.sim.setAccount(h.sim.apiKey, { maxCredits: 1_000_000 });
    }
  });

  it('a wrong API key is "unauthorized", and the key shows up in no output and no row', async () => {
    const wrongKey = 'wrong-key-7f3a9c1e5b';
    // debug logging: the most the process ever writes, so the most chances to leak the key
    const env = { ...h.env, API_KEY: wrongKey, LOG_LEVEL: 'debug' };
    const used = await usedCredits();
    const [backfill, add] = await Promise.all([
      cli(['backfill', '--source', String(source.id)], env),
      cli(['sources', 'add', 'channel', channel(3).handle], env),
    ]);
    expectExit(backfill!, 3);
    expect(backfill!.stdout).toMatch(new RegExp(`^source ${source.id}: error unauthorized: .*401 unauthorized`, 'm'));
    expectExit(add!, 3);
    expect(add!.stderr).toMatch(/^error: .*401 unauthorized: Invalid API key\./m);
    expect(add!.stderr).not.toMatch(/^\s+at\s/m);
    for (const r of [backfill!, add!]) expect(output(r)).not.toContain(wrongKey);

    expect(await usedCredits()).toBe(used);
    expect(await h.database.sql`select 1 from batches where source_id = ${source.id}`).toHaveLength(0);
    expect(await h.database.sql`select 1 from sources where external_id = ${channel(3).id}`).toHaveLength(0);
    const leaked = await h.database.sql`
      select 1 from sources where coalesce(last_error, '') like ${'%' + wrongKey + '%'}
      union all select 1 from sync_runs where coalesce(detail, '') like ${'%' + wrongKey + '%'}`;
    expect(leaked).toHaveLength(0);
  });
});

/** Retryable items left by an expiry, per kind. */
type RetryableByKind = { kind: string; n: number }[];

async function pendingRetryable(): Promise<number> {
  const [r] = await h.database.sql<{ n: number }[]>`
    select count(*)::int as n from batch_items where state = 'retryable' and resubmitted_in is null`;
  return r!.n;
}

/**
 * A source whose batches age out before they finish: one item a second and a 3 s lifetime, so
 * each batch has a few items done when it expires. Returns the backfill and what it left retryable.
 */
async function expireASource(
  channelIndex: number,
): Promise<{ source: Source; r: CliResult; retryable: RetryableByKind }> {
  const source = await addSource('channel', channel(channelIndex).id);
  h.sim.setJobSettings({ itemsPerSecond: 1, lifetimeMs: 3_000 });
  let r: CliResult;
  try {
    r = await cli(['backfill', '--source', String(source.id), '--timeout', '40s']);
  } finally {
    h.sim.setJobSettings(NORMAL_JOBS);
  }
  const retryable = await h.database.sql<{ kind: string; n: number }[]>`
    select b.kind, count(*)::int as n from batch_items i join batches b using (job_id)
    where b.source_id = ${source.id} and i.state = 'retryable' group by b.kind order by b.kind`;
  return { source, r, retryable: [...retryable] };
}

describe('an expired batch: backfill exits 1, replay --expired shows and guards what it would re-submit', () => {
  ownHarness('expired');
  const expired = once(() => expireASource(3));

  it('a batch that ages out before it finishes makes backfill exit 1 and list what is left', async () => {
    const { source, r, retryable } = await expired();
    expectExit(r, 1);
    const batches = await h.database.sql<{ job_id: string; kind: string; status: string; error_code: string }[]>`
      select job_id, kind, status, error_code from batches where source_id = ${source.id} order by kind`;
    expect(batches.map((b) => [b.kind, b.status, b.error_code])).toEqual([
      ['transcript', 'expired', 'job-expired'],
      ['video', 'expired', 'job-expired'],
    ]);
    expect(retryable.map((g) => g.kind)).toEqual(['transcript', 'video']);

    expect(r.stdout).toContain('not everything landed (exit 1)');
    for (const b of batches) {
      const n = retryable.find((g) => g.kind === b.kind)!.n;
      expect(r.stdout).toContain(
        `batch ${b.job_id} (${b.kind}${b.kind === 'transcript' ? ' en' : ''}, source ${source.id}) expired (job-expired)`,
      );
      expect(r.stdout).toContain(
        `batch ${b.job_id} (${b.kind}${b.kind === 'transcript' ? ' en' : ''}, source ${source.id}): ${n} item(s) left retryable`,
      );
    }
  });

  it('replay --expired --dry-run prints the estimate and submits nothing; without --yes it refuses', async () => {
    const { source, retryable } = await expired();
    const items = retryable.reduce((n, g) => n + g.n, 0);
    const estimate = retryable.length + items;
    const used = await usedCredits();
    const batches = await batchCount();

    const [dry, noYes] = await Promise.all([cli(['replay', '--expired', '--dry-run']), cli(['replay', '--expired'])]);
    expectExit(dry!, 0);
    expect(dry!.stdout).toContain(`estimated cost: ${estimate} credit(s)`);
    for (const g of retryable) {
      expect(dry!.stdout).toMatch(
        new RegExp(`^${source.id}\\s+${g.kind}.*\\s${g.n}\\s+batch_\\S+\\s+${g.n + 1}\\s*$`, 'm'),
      );
    }
    expectExit(noYes!, 2);
    expect(noYes!.stdout).toContain(`estimated cost: ${estimate} credit(s)`);
    expect(noYes!.stderr).toContain('add --yes to proceed');

    expect(await usedCredits()).toBe(used);
    expect(await batchCount()).toBe(batches);
    expect(await pendingRetryable()).toBe(items);
  });

  it('replay --expired --yes that the credits cannot pay for exits 3 and submits nothing', async () => {
    const { retryable } = await expired();
    const items = await pendingRetryable();
    expect(items).toBe(retryable.reduce((n, g) => n + g.n, 0));
    const used = await usedCredits();
    const batches = await batchCount();
    h.sim.setAccount(h.sim.apiKey, { maxCredits: used + 1 });
    let r: CliResult;
    try {
      r = await cli(['replay', '--expired', '--yes']);
    } finally {
      h.sim.setAccount(h.sim.apiKey, { maxCredits: 1_000_000 });
    }
    expectExit(r, 3);
    expect(r.stderr).toMatch(/^error: not enough credits: .* needs \d+, 1 are left\n$/m);
    expect(await usedCredits()).toBe(used);
    expect(await batchCount()).toBe(batches);
    expect(await pendingRetryable()).toBe(items);
  });
});

describe('an expired batch: replay --expired --yes re-submits its items once', () => {
  // a block of its own: the replay uses up the retryable items the tests above read
  ownHarness('replay-expired');

  it('replay --expired --yes re-submits every retryable item exactly once, waits, and exits 0; asked again, there is nothing to do', async () => {
    const { source, r: expiry, retryable } = await expireASource(3);
    expectExit(expiry, 1);
    const before = await h.database.sql<{ job_id: string; video_id: string; kind: string }[]>`
      select i.job_id, i.video_id, b.kind from batch_items i join batches b using (job_id)
      where i.state = 'retryable' and i.resubmitted_in is null order by i.job_id, i.video_id`;
    expect(before.length).toBe(retryable.reduce((n, g) => n + g.n, 0));
    const used = await usedCredits();

    const r = await cli(['replay', '--expired', '--yes']);
    expectExit(r, 0);
    const m = /^submitted (\d+) video\(s\) in (\d+) batch\(es\): (.+)$/m.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    const jobIds = m![3]!.split(', ');
    expect(Number(m![1])).toBe(before.length);
    expect(jobIds).toHaveLength(retryable.length);
    expect(r.stdout).toMatch(/^replay: \d+ item\(s\) stored, 0 not landed$/m);
    // 1 per batch + 1 per video; polling is free
    expect((await usedCredits()) - used).toBe(jobIds.length + before.length);

    // each old item points at the one new batch that carries its video, of the same kind
    const after = await h.database.sql<
      { job_id: string; video_id: string; resubmitted_in: string | null; new_kind: string | null; in_new: boolean }[]
    >`
      select i.job_id, i.video_id, i.resubmitted_in, nb.kind as new_kind,
        exists (select 1 from batch_items n where n.job_id = i.resubmitted_in and n.video_id = i.video_id) as in_new
      from batch_items i left join batches nb on nb.job_id = i.resubmitted_in
      where (i.job_id, i.video_id) in (select * from unnest(${before.map((b) => b.job_id)}::text[], ${before.map((b) => b.video_id)}::text[]))
      order by i.job_id, i.video_id`;
    expect(after).toHaveLength(before.length);
    after.forEach((a, i) => {
      expect(jobIds).toContain(a.resubmitted_in);
      expect(a.new_kind).toBe(before[i]!.kind);
      expect(a.in_new).toBe(true);
    });
    const newBatches = await h.database.sql<{ status: string; total: number }[]>`
      select status, total from batches where job_id = any(${jobIds}::text[])`;
    expect(newBatches.map((b) => b.status)).toEqual(jobIds.map(() => 'completed'));
    expect(newBatches.reduce((n, b) => n + b.total, 0)).toBe(before.length);
    // every public video of the source is now a row
    const ids = h.sim.catalog.videoIds(source.externalId)!;
    expect(await videoIdsIn(ids)).toEqual(publicIds(ids).sort());

    const usedAfter = await usedCredits();
    const again = await cli(['replay', '--expired', '--yes']);
    expectExit(again, 0);
    expect(again.stdout).toBe('nothing to re-submit: no retryable items\n');
    expect(await usedCredits()).toBe(usedAfter);
  });
});

describe('with Redis down', () => {
  ownHarness('redis-down');
  /** a local port nothing listens on */
  async function closedPort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    return port;
  }

  it('backfill fails within seconds naming REDIS_URL and spends nothing; sources pause still pauses', async () => {
    const backfilled = await addSource('playlist', channel(0).playlistIds[0]!);
    const paused = await addSource('playlist', channel(2).playlistIds[0]!);
    const env = { ...h.env, REDIS_URL: `redis://127.0.0.1:${await closedPort()}` };
    const requests = h.sim.stats().total;
    const batches = await batchCount();
    const started = Date.now();
    const [backfill, pause] = await Promise.all([
      cli(['backfill', '--source', String(backfilled.id)], env),
      cli(['sources', 'pause', String(paused.id)], env),
    ]);
    // it used to wait for Redis forever; now 5 s and a bounded close
    expect(Date.now() - started).toBeLessThan(20_000);

    expectExit(backfill, 1);
    expect(backfill.stderr).toMatch(
      /^error: Redis is not reachable at REDIS_URL 127\.0\.0\.1:\d+: no connection within 5000 ms/m,
    );
    expect(backfill.stderr).not.toMatch(/^\s+at\s/m);
    expect(backfill.stdout).toBe('');
    expect(h.sim.stats().total).toBe(requests);
    expect(await batchCount()).toBe(batches);

    // the cron schedule is the daemon's to fix at its next reconcile; the pause itself is in Postgres
    expectExit(pause, 0);
    expect(pause.stdout).toBe(`source ${paused.id} paused: playlist ${paused.externalId} (${paused.title})\n`);
    expect(parseLogLines(pause.stderr).filter((l) => l.event === 'schedules.update_failed')).toHaveLength(1);
    expect((await h.database.sql`select paused from sources where id = ${paused.id}`)[0]!.paused).toBe(true);
  });
});
