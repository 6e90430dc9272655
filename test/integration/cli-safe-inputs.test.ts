/**
 * Safe by default (issue #27, point 6), through the CLI as a real process against the simulator,
 * a private Postgres database and a private queue prefix: upstream text with terminal escapes
 * reaches no terminal, large inputs do not crash, credentials in a bad URL are never echoed,
 * strict dates, a bounded saved-search query, control characters in a search, and a queue job
 * whose payload fails its schema fails once, for good. Every refusal exits 2, names the field and
 * the value, and changes nothing.
 */
import { loadConfig } from '../../src/config.ts';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transcriptRowFromApi, upsertTranscripts } from '../../src/db/transcripts.ts';
import { createLogger } from '../../src/log.ts';
import { drainSearchIndex } from '../../src/pipeline/services/search-index.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, waitFor, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';
import type { LogLine } from '../helpers/proc.ts';

/** The search indexer cuts passages with the default settings here. */
const PASSAGES = loadConfig({}).pipeline.passages;

let h: PipelineHarness;
let dir: string;
const lines: LogLine[] = [];

beforeAll(async () => {
  h = await createPipelineHarness('safe-inputs', { catalog: { channels: 2, channelSizes: [5, 5] } });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.startsWith('{')) lines.push(JSON.parse(l) as LogLine);
      done();
    },
  });
  h.deps.log = createLogger({ level: 'info', destination: sink });
  dir = await mkdtemp(join(tmpdir(), 'vsi-safe-'));
});

afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const cli = (args: string[], extra: Record<string, string> = {}, timeoutMs = 60_000): Promise<CliResult> =>
  runCli(args, { ...h.env, ...extra }, timeoutMs);

async function sourceCount(): Promise<number> {
  const [r] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from sources`;
  return r!.n;
}

const ESC = '\x1b';
/**
 * Upstream text as a hostile upstream could send it: clear screen and cursor home (CSI), an OSC 8
 * link, an 8-bit CSI (C1), a right-to-left override, a BEL, a carriage return.
 */
const HOSTILE = `Nice${ESC}[2J${ESC}[H video ${ESC}]8;;https://evil.example/${ESC}\\click${ESC}]8;;${ESC}\\ \u009b31mred \u202eevil\u202c \x07bell\rover`;
/** What must never reach a terminal: C0 controls but newline, DEL, C1 controls, bidi controls. */
const UNSAFE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('upstream text with terminal escapes', () => {
  let sourceId: number;

  beforeAll(async () => {
    const [s] = await h.database.sql<{ id: number }[]>`
      insert into sources (kind, ref, external_id, title, max_videos, last_error, last_error_code, last_error_at)
      values ('playlist', 'PLhostile0000', 'PLhostile0000', ${HOSTILE}, 10, ${`upstream said: ${HOSTILE}`}, 'internal-error', now())
      returning id`;
    sourceId = s!.id;
    await h.database
      .sql`insert into videos (id, title, channel_id, channel_name) values ('hostile0001', ${HOSTILE}, 'UChostile', ${HOSTILE})`;
    const row = transcriptRowFromApi(
      'hostile0001',
      {
        content: [
          { text: `the zebracorn ${ESC}]0;pwned${'\x07'} gallops ${ESC}[31m far`, offset: 1_000, duration: 2_000 },
        ],
        lang: 'en',
        availableLangs: ['en'],
      },
      'job-hostile-1',
    );
    await upsertTranscripts(h.database.sql, [row]);
    await drainSearchIndex({ sql: h.database.sql, passages: PASSAGES });
  });

  it('search: the human output carries no control sequence, the words stay; --json keeps the text exactly', async () => {
    const human = await cli(['search', 'zebracorn']);
    expectExit(human, 0);
    expect(human.stdout).not.toMatch(UNSAFE);
    expect(human.stdout).toContain('hostile0001');
    expect(human.stdout).toContain('Nice');
    expect(human.stdout).toContain('click');
    expect(human.stdout).not.toContain('evil.example');
    expect(human.stdout).toContain('«zebracorn»');

    const json = await cli(['search', 'zebracorn', '--json']);
    expectExit(json, 0);
    // escaped in the JSON text, the same string once parsed
    expect(json.stdout).not.toMatch(UNSAFE);
    const hit = JSON.parse(json.stdout.trim()) as { title: string; channel_name: string };
    expect(hit.title).toBe(HOSTILE);
    expect(hit.channel_name).toBe(HOSTILE);
  });

  it('sources list and status: tables and lines carry no control sequence; --json keeps the text exactly', async () => {
    const [list, status, listJson, statusJson] = await Promise.all([
      cli(['sources', 'list']),
      cli(['status']),
      cli(['sources', 'list', '--json']),
      cli(['status', '--json']),
    ]);
    for (const r of [list, status]) {
      expectExit(r, 0);
      expect(r.stdout).not.toMatch(UNSAFE);
      expect(r.stdout).toContain('Nice');
      expect(r.stdout).not.toContain('evil.example');
    }
    for (const r of [listJson, statusJson]) {
      expectExit(r, 0);
      expect(r.stdout).not.toMatch(UNSAFE);
    }
    const listed = (JSON.parse(listJson.stdout) as { id: number; title: string }[]).find((s) => s.id === sourceId);
    expect(listed?.title).toBe(HOSTILE);
    const reported = (JSON.parse(statusJson.stdout) as { sources: { id: number; title: string }[] }).sources.find(
      (s) => s.id === sourceId,
    );
    expect(reported?.title).toBe(HOSTILE);
  });
});

describe('control characters in a search query', () => {
  it('exit 2 naming the character, not a database error', async () => {
    const [soh, esc] = await Promise.all([cli(['search', 'a\x01b']), cli(['search', `a${ESC}[2Jb`])]);
    expectCleanError(soh!, 2, 'words', '\\u0001', 'control character');
    expectCleanError(esc!, 2, 'words', '\\u001b', 'control character');
  });
});

describe('strict dates', () => {
  it('export --since and replay --since refuse an impossible date or a date-time without a zone: exit 2, the option, the value, the forms', async () => {
    const out = join(dir, 'never.jsonl');
    const [exportFeb30, replayFeb31, replayNoZone, exportMonth13, exportHour25] = await Promise.all([
      cli(['export', '--format', 'jsonl', '--out', out, '--since', '2024-02-30']),
      cli(['replay', '--failed', '--since', '2024-02-31', '--dry-run']),
      cli(['replay', '--failed', '--since', '2024-02-29T10:00:00', '--dry-run']),
      cli(['export', '--format', 'jsonl', '--out', out, '--since', '2024-13-01']),
      cli(['export', '--format', 'jsonl', '--out', out, '--since', '2024-02-01T25:00:00Z']),
    ]);
    expectCleanError(exportFeb30!, 2, '--since', '2024-02-30', '2024-05-01T12:00:00Z');
    expectCleanError(replayFeb31!, 2, '--since', '2024-02-31', '2024-05-01T12:00:00Z');
    expectCleanError(replayNoZone!, 2, '--since', '2024-02-29T10:00:00', 'zone');
    expectCleanError(exportMonth13!, 2, '--since', '2024-13-01');
    expectCleanError(exportHour25!, 2, '--since', '2024-02-01T25:00:00Z');
  });

  it('a leap day and a date-time with an offset are accepted', async () => {
    const [leap, offset] = await Promise.all([
      cli(['replay', '--failed', '--since', '2024-02-29', '--dry-run']),
      cli(['replay', '--failed', '--since', '2024-02-29T10:00:00+02:00', '--dry-run']),
    ]);
    expectExit(leap, 0);
    expectExit(offset, 0);
    expect(leap.stdout).toBe('nothing to re-submit: no retryable items\n');
  });
});

describe('credentials in a bad URL are never echoed', () => {
  it('DATABASE_URL, REDIS_URL, API_BASE_URL: exit 2 naming the variable, the password shown as ***', async () => {
    const cases: [string, string, string][] = [
      ['DATABASE_URL', 'mysql://ingest:s3cret-db@db.example/corpus', 'ingest:***@db.example'],
      ['DATABASE_URL', 'mysql://ingest:s3cret/with@sign@db.example/corpus', 'ingest:***@db.example'],
      ['REDIS_URL', 'http://:s3cret-redis@cache.example:6379', ':***@cache.example'],
      ['API_BASE_URL', 'https://user:s3cret-api@api.example/v2', 'user:***@api.example'],
      ['API_BASE_URL', 'https://s3cret-token@api.example/v2', '***@api.example'],
    ];
    const results = await Promise.all(cases.map(([variable, value]) => cli(['status'], { [variable]: value })));
    results.forEach((r, i) => {
      const [variable, , shown] = cases[i]!;
      expectCleanError(r, 2, new RegExp(`^error: ${variable}: `, 'm'), shown);
      expect(r.stderr).not.toContain('s3cret');
    });
  });
});

describe('large inputs', () => {
  it('sources add videos --file with 300 000 IDs registers them all', async () => {
    const n = 300_000;
    const ids = Array.from({ length: n }, (_, i) => `v${i.toString(36).padStart(10, '0')}`);
    const file = join(dir, 'many-ids.txt');
    await writeFile(file, `${ids.join('\n')}\n`);
    const r = await cli(['sources', 'add', 'videos', '--file', file], {}, 180_000);
    expectExit(r, 0);
    const m = /^source (\d+) added: videos /m.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    const [c] = await h.database.sql<
      { n: number }[]
    >`select count(*)::int as n from source_videos where source_id = ${Number(m![1])}`;
    expect(c!.n).toBe(n);
  }, 240_000);

  it('events renders a table of 300 000 rows', async () => {
    const n = 300_000;
    const [before] = await h.database.sql<{ id: string | null }[]>`select max(id)::text as id from events`;
    await h.database
      .sql`insert into events (type, data) select 'source.synced', jsonb_build_object('n', g) from generate_series(1, ${n}::int) as g`;
    const r = await cli(
      ['events', '--since', before!.id ?? '0', '--type', 'source.synced', '--limit', String(n)],
      {},
      180_000,
    );
    expectExit(r, 0);
    expect(r.stdout.split('\n').filter((l) => l !== '')).toHaveLength(n + 1);
  }, 240_000);
});

describe('a saved search query is bounded', () => {
  it('a 100 kB query, or one with control characters, is refused at sources add: exit 2, nothing registered, no API call', async () => {
    const sources = await sourceCount();
    const requests = h.sim.stats().total;
    const huge = 'x'.repeat(100_000);
    const [long, control] = await Promise.all([
      cli(['sources', 'add', 'search', huge]),
      cli(['sources', 'add', 'search', `cats${ESC}[2J dogs`]),
    ]);
    expectCleanError(long!, 2, 'query', '100000 characters', 'at most');
    expect(long!.stderr.length).toBeLessThan(1_000);
    expectCleanError(control!, 2, 'query', '\\u001b');
    expect(await sourceCount()).toBe(sources);
    expect(h.sim.stats().total).toBe(requests);
  });
});

describe('a queue job whose payload fails its schema', () => {
  it('fails at its first attempt, for good, logged once with the failing path', async () => {
    const workers = h.startWorkers(['scheduler', 'poller']);
    try {
      const sync = await h.queues.schedule.add('sync', { sourceId: 'not-a-number' } as never, {
        jobId: 'bad-sync-payload',
      });
      const poll = await h.queues.poll.add('poll', { jobId: 42 } as never, { jobId: 'bad-poll-payload' });
      for (const job of [sync, poll]) {
        const queue = job.queueName === h.queues.schedule.name ? h.queues.schedule : h.queues.poll;
        const state = await waitFor(
          async () => {
            const j = await queue.getJob(job.id!);
            return j && j.attemptsMade >= 1 ? await j.getState() : undefined;
          },
          20_000,
          `job ${job.id} to be tried`,
        );
        const after = await queue.getJob(job.id!);
        expect(state, `job ${job.id}`).toBe('failed');
        expect(after!.attemptsMade).toBe(1);
      }
      const failed = lines.filter(
        (l) => l.event === 'job.failed' && (l.bullJobId === 'bad-sync-payload' || l.bullJobId === 'bad-poll-payload'),
      );
      expect(failed.map((l) => [l.bullJobId, l.payloadPath])).toEqual(
        expect.arrayContaining([
          ['bad-sync-payload', 'sourceId'],
          ['bad-poll-payload', 'jobId'],
        ]),
      );
      expect(failed).toHaveLength(2);
    } finally {
      await workers.close(2_000);
    }
  });
});
