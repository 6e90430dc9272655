/**
 * Change events (issue #14) outside the sink: `batch.completed` / `batch.expired` once per batch
 * however often its end is seen, `source.synced` / `source.failed` per sync run, `account.hold` /
 * `account.hold_lifted` on transitions only, each written by the statement that makes the change;
 * a LISTEN hears the new id at commit; ids become visible in increasing order; the `events` CLI
 * as a process (`--json --since`, `--type`, a bad type, `--follow`); `prune` drops old events
 * but keeps those a webhook endpoint's cursor still needs.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { endBatchLocally, recordPollAnswer, type PollAnswer } from '../../src/db/batch-polls.ts';
import { insertSubmittedBatch } from '../../src/db/batch-records.ts';
import { recordEvent } from '../../src/db/events.ts';
import { finishSyncRun, recordHeldRun, startSyncRun } from '../../src/db/sync-runs.ts';
import { clearHolds, setHold } from '../../src/db/upstream-holds.ts';
import { addEndpoint } from '../../src/db/webhooks.ts';
import { EVENTS_CHANNEL } from '../../src/domain/events.ts';
import { loadConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/log.ts';
import { prune } from '../../src/pipeline/commands/prune.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli, waitFor, type CliResult } from '../helpers/pipeline.ts';
import { startCli } from '../helpers/proc.ts';

let database: TestDatabase;
let env: Record<string, string>;
let sourceId: number;

const cli = (args: string[]): Promise<CliResult> => runCli(args, env, 60_000);

interface Ev {
  id: number;
  type: string;
  data: Record<string, unknown>;
  source_id: number | null;
}
const eventsOf = (type: string) =>
  database.sql<Ev[]>`select id::float8 as id, type, data, source_id from events where type = ${type} order by id`;

async function submitted(jobId: string): Promise<void> {
  await insertSubmittedBatch(database.sql, {
    jobId,
    sourceId,
    kind: 'video',
    lang: null,
    mode: 'batch',
    creditsEstimated: 3,
    request: { videoIds: ['a', 'b'] },
    textOnly: false,
    replayOf: null,
    firstPollDelayMs: 0,
  });
}

const answer = (over: Partial<PollAnswer>): PollAnswer => ({
  status: 'active',
  upstreamStatus: 'active',
  errorCode: null,
  total: 2,
  succeeded: 1,
  failed: 0,
  creditsEstimated: null,
  polls: 1,
  reason: null,
  completedAt: null,
  terminal: false,
  ...over,
});

beforeAll(async () => {
  database = await createTestDatabase('events');
  env = { DATABASE_URL: database.url, LOG_LEVEL: 'warn', QUEUE_PREFIX: `{vsi-test-events-${process.pid}}` };
  const [s] = await database.sql<{ id: number }[]>`
    insert into sources (kind, ref, external_id, max_videos) values ('playlist', 'PLevents', 'PLevents', 10) returning id`;
  sourceId = s!.id;
}, 60_000);

afterAll(async () => {
  await database?.drop();
});

describe('producers', () => {
  beforeEach(async () => {
    await database.sql`delete from events`;
  });

  it('batch.completed once per batch, even when the completion is seen twice; batch.expired once', async () => {
    await submitted('job-ev-1');
    await recordPollAnswer(database.sql, 'job-ev-1', answer({}));
    expect(await eventsOf('batch.completed')).toHaveLength(0);
    const done = answer({ status: 'completed', upstreamStatus: 'completed', succeeded: 2, polls: 2, terminal: true });
    await database.sql.begin((tx) => recordPollAnswer(tx, 'job-ev-1', done));
    await recordPollAnswer(database.sql, 'job-ev-1', { ...done, polls: 3 });
    // two polls that see the end at once still make one
    await Promise.all([
      recordPollAnswer(database.sql, 'job-ev-1', done),
      recordPollAnswer(database.sql, 'job-ev-1', done),
    ]);
    const completed = await eventsOf('batch.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]!.source_id).toBe(sourceId);
    expect(completed[0]!.data).toMatchObject({
      jobId: 'job-ev-1',
      sourceId,
      kind: 'video',
      status: 'completed',
      total: 2,
      succeeded: 2,
      failed: 0,
    });

    await submitted('job-ev-2');
    const end = { status: 'expired', errorCode: 'max-age', reason: 'too old' } as const;
    await endBatchLocally(database.sql, 'job-ev-2', end);
    await endBatchLocally(database.sql, 'job-ev-2', end);
    const expired = await eventsOf('batch.expired');
    expect(expired.map((e) => e.data)).toEqual([
      expect.objectContaining({ jobId: 'job-ev-2', status: 'expired', errorCode: 'max-age', reason: 'too old' }),
    ]);

    // a batch rolled back with its transaction leaves no event
    await submitted('job-ev-3');
    await database.sql
      .begin(async (tx) => {
        await recordPollAnswer(tx, 'job-ev-3', done);
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    expect((await eventsOf('batch.completed')).map((e) => e.data.jobId)).toEqual(['job-ev-1']);
  });

  it('source.synced and source.failed, one per sync run', async () => {
    const figures = {
      videosListed: 5,
      videosSubmitted: 2,
      creditsEstimated: 3,
      listingCredits: 1,
      detail: null,
      jobIds: ['j1'],
    };
    const r1 = await startSyncRun(database.sql, sourceId);
    await finishSyncRun(database.sql, r1, 'submitted', figures);
    const r2 = await startSyncRun(database.sql, sourceId);
    await finishSyncRun(database.sql, r2, 'up-to-date', { ...figures, videosSubmitted: 0, jobIds: [] });
    const r3 = await startSyncRun(database.sql, sourceId);
    await finishSyncRun(database.sql, r3, 'error', { ...figures, detail: 'listing failed: 500' });
    await recordHeldRun(database.sql, sourceId, 'held: credits', new Date());

    const synced = await eventsOf('source.synced');
    expect(synced.map((e) => [e.data.runId, e.data.outcome, e.source_id])).toEqual([
      [r1, 'submitted', sourceId],
      [r2, 'up-to-date', sourceId],
    ]);
    expect(synced[0]!.data).toMatchObject({ sourceId, videosListed: 5, videosSubmitted: 2, jobIds: ['j1'] });
    const failed = await eventsOf('source.failed');
    expect(failed.map((e) => [e.data.outcome, e.data.detail])).toEqual([
      ['error', 'listing failed: 500'],
      ['held', 'held: credits'],
    ]);
  });

  it('account.hold and account.hold_lifted on transitions only', async () => {
    expect(await setHold(database.sql, 'fp-1', 'credits', 'no credits left')).toBe(true);
    expect(await setHold(database.sql, 'fp-1', 'credits', 'still no credits')).toBe(false);
    expect(await clearHolds(database.sql, 'fp-1', ['credits'], 'credits are back')).toEqual(['credits']);
    expect(await clearHolds(database.sql, 'fp-1', ['credits'], 'credits are back')).toEqual([]);
    expect((await eventsOf('account.hold')).map((e) => e.data)).toEqual([
      { code: 'credits', scope: 'submit', reason: 'no credits left', keyFingerprint: 'fp-1' },
    ]);
    expect((await eventsOf('account.hold_lifted')).map((e) => e.data)).toEqual([
      { code: 'credits', reason: 'credits are back', keyFingerprint: 'fp-1' },
    ]);
  });

  it('a LISTEN on the channel hears the new id when the transaction commits, not before', async () => {
    const heard: string[] = [];
    const listener = await database.sql.listen(EVENTS_CHANNEL, (payload) => heard.push(payload));
    try {
      let id = 0;
      await database.sql.begin(async (tx) => {
        id = await recordEvent(tx, { type: 'source.synced', data: { sourceId }, sourceId });
        await new Promise((r) => setTimeout(r, 300));
        expect(heard).toEqual([]);
      });
      await waitFor(async () => (heard.length > 0 ? true : undefined), 5_000, 'a notification');
      expect(heard).toEqual([String(id)]);
    } finally {
      await listener.unlisten();
    }
  });

  it('ids become visible in increasing order: a transaction that writes events waits for an earlier one to commit', async () => {
    let releaseFirst: () => void = () => undefined;
    const firstHolds = new Promise<void>((r) => (releaseFirst = r));
    let firstId = 0;
    let firstInserted: () => void = () => undefined;
    const inserted = new Promise<void>((r) => (firstInserted = r));
    const first = database.sql.begin(async (tx) => {
      firstId = await recordEvent(tx, { type: 'source.synced', data: { n: 1 } });
      firstInserted();
      await firstHolds;
    });
    await inserted;
    let secondId = 0;
    const second = database.sql.begin(async (tx) => {
      secondId = await recordEvent(tx, { type: 'source.synced', data: { n: 2 } });
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(secondId).toBe(0);
    releaseFirst();
    await Promise.all([first, second]);
    expect(secondId).toBeGreaterThan(firstId);
  });
});

describe('the events command', () => {
  let ids: number[];
  beforeAll(async () => {
    await database.sql`delete from events`;
    ids = [];
    for (const [type, n] of [
      ['source.synced', 1],
      ['batch.completed', 2],
      ['source.failed', 3],
      ['batch.completed', 4],
    ] as const) {
      ids.push(await recordEvent(database.sql, { type, data: { n }, sourceId: n === 4 ? null : sourceId }));
    }
  });

  it('--json --since prints JSON lines after the id, in order', async () => {
    const r = await cli(['events', '--json', '--since', String(ids[1])]);
    expectExit(r, 0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.id, l.type, l.data])).toEqual([
      [ids[2], 'source.failed', { n: 3 }],
      [ids[3], 'batch.completed', { n: 4 }],
    ]);
    expect(Object.keys(lines[0]!)).toEqual(['id', 'type', 'occurred_at', 'data']);
    expect(Number.isNaN(Date.parse(lines[0]!.occurred_at as string))).toBe(false);
  });

  it('--type and --source filter; the table shows the rows', async () => {
    const r = await cli(['events', '--json', '--type', 'batch.completed,source.failed', '--source', String(sourceId)]);
    expectExit(r, 0);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: number }).id),
    ).toEqual([ids[1], ids[2]]);
    const t = await cli(['events', '--type', 'batch.completed']);
    expectExit(t, 0);
    expect(t.stdout).toMatch(/^id\s+occurred\s+type\s+source\s+video or page\s+data$/m);
    expect(t.stdout.trim().split('\n')).toHaveLength(3);
    expect(t.stdout).toContain('{"n":4}');
  });

  it('an unknown --type exits 2 naming the value and the valid types', async () => {
    const r = await cli(['events', '--type', 'batch.completed,video.deleted']);
    expectCleanError(r, 2, '"video.deleted" is not an event type', 'batch.completed', 'account.hold_lifted');
  });

  it('--follow prints an event written after it started, and exits 0 on SIGTERM', async () => {
    const p = startCli(['events', '--follow', '--json', '--since', String(ids[3])], env, 'events-follow');
    try {
      // it is listening once the LISTEN connection is up; an event written before that is read anyway
      await new Promise((r) => setTimeout(r, 1_500));
      const id = await recordEvent(database.sql, { type: 'account.hold', data: { code: 'credits' } });
      await waitFor(async () => (p.stdout().includes(`"id":${id}`) ? true : undefined), 4_000, 'the followed event');
      const lines = p
        .stdout()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id: number; type: string });
      expect(lines.map((l) => [l.id, l.type])).toEqual([[id, 'account.hold']]);
      p.kill('SIGTERM');
      const exit = await p.exited;
      expect(exit.code).toBe(0);
    } finally {
      p.kill('SIGKILL');
    }
  });
});

describe('prune', () => {
  it('drops events older than EVENTS_RETENTION_DAYS except those an endpoint cursor still needs', async () => {
    await database.sql`delete from events`;
    await database.sql`delete from webhook_endpoints`;
    const ids: number[] = [];
    for (let n = 0; n < 6; n++) ids.push(await recordEvent(database.sql, { type: 'source.synced', data: { n } }));
    // all but the last are 40 days old
    await database.sql`update events set occurred_at = now() - interval '40 days' where id < ${ids[5]!}`;
    // an endpoint that has handled the first two still needs the third on
    const ep = await addEndpoint(database.sql, {
      url: 'http://127.0.0.1:9/hook',
      eventTypes: null,
      allowPrivate: true,
      key: Buffer.alloc(32, 1),
      secretsKey: undefined,
    });
    await database.sql`update webhook_endpoints set cursor = ${ids[1]!} where id = ${ep}`;
    // a disabled endpoint needs nothing
    const off = await addEndpoint(database.sql, {
      url: 'http://127.0.0.1:9/off',
      eventTypes: null,
      allowPrivate: true,
      key: Buffer.alloc(32, 2),
      secretsKey: undefined,
    });
    await database.sql`update webhook_endpoints set cursor = 0, enabled = false where id = ${off}`;

    const settings = { ...loadConfig({}).pipeline, eventsRetentionDays: 30 };
    const dry = await prune({ sql: database.sql, log: silentLogger(), settings }, { dryRun: true, trigger: 'cli' });
    expect(dry.freed.events.rows).toBe(2);
    expect((await database.sql`select id from events`).length).toBe(6);
    const r = await prune({ sql: database.sql, log: silentLogger(), settings }, { dryRun: false, trigger: 'cli' });
    expect(r.freed.events.rows).toBe(2);
    expect(
      (await database.sql<{ id: number }[]>`select id::float8 as id from events order by id`).map((e) => e.id),
    ).toEqual(ids.slice(2));

    // once the endpoint is removed, the old ones go; the recent one stays
    await database.sql`delete from webhook_endpoints`;
    await prune({ sql: database.sql, log: silentLogger(), settings }, { dryRun: false, trigger: 'cli' });
    expect(
      (await database.sql<{ id: number }[]>`select id::float8 as id from events order by id`).map((e) => e.id),
    ).toEqual([ids[5]]);
    // EVENTS_RETENTION_DAYS=0 keeps them all
    await database.sql`update events set occurred_at = now() - interval '400 days'`;
    const kept = await prune(
      { sql: database.sql, log: silentLogger(), settings: { ...settings, eventsRetentionDays: 0 } },
      { dryRun: false, trigger: 'cli' },
    );
    expect(kept.freed.events.rows).toBe(0);
  });
});
