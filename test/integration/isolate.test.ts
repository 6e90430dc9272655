/**
 * One value Postgres rejects never holds back its neighbours: the write is bisected down to the
 * rejected item (src/db/isolate.ts), and the sink sets that item aside with Postgres's words.
 * Real Postgres, a database of this file's own.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { writeIsolating } from '../../src/db/isolate.ts';
import { loadConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/log.ts';
import { sinkBatch } from '../../src/pipeline/ingest/sink.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('isolate');
});
afterAll(async () => {
  await t?.drop();
});

it('bisects a rejected write down to the items Postgres refuses, keeps the rest, and counts its statements', async () => {
  await t.sql`create table iso (n int primary key, v int check (v < 100))`;
  const items = Array.from({ length: 64 }, (_, i) => ({ n: i, v: i === 17 || i === 50 ? 1000 : i }));
  let writes = 0;
  const r = await t.sql.begin((tx) =>
    writeIsolating(tx, items, async (sp, part) => {
      writes++;
      await sp`insert into iso ${sp(part.map((p) => ({ n: p.n, v: p.v })))}`;
      return part.length;
    }),
  );
  expect(r.rejected.map((x) => x.item.n)).toEqual([17, 50]);
  expect(r.rejected[0]!.message).toMatch(/check constraint/);
  const [count] = await t.sql<{ n: number }[]>`select count(*)::int as n from iso`;
  expect(count?.n).toBe(62);
  // 1 failed whole write, then halves: far fewer than one write per item
  expect(writes).toBeLessThan(30);
});

it('the sink stores every transcript of a chunk but the one Postgres cannot index, which it quarantines with the reason', async () => {
  const job = 'job_isolate_sink';
  await t.sql`insert into batches (job_id, kind, lang, status, credits_estimated, request) values (${job}, 'transcript', null, 'completed', 6, ${t.sql.json({ videoIds: [] })})`;
  // a language code too long for the primary key's index (random, so it does not compress)
  const hugeLang = randomBytes(9000).toString('base64');
  const ids = ['v1', 'v2', 'v3', 'v4', 'v5'];
  for (const id of ids) {
    const transcript = {
      content: [{ text: `hello ${id}`, offset: 0, duration: 1 }],
      lang: id === 'v3' ? hugeLang : 'en',
      availableLangs: ['en'],
    };
    await t.sql`
      insert into batch_items (job_id, video_id, state, payload, landed_at)
      values (${job}, ${id}, 'landed', ${t.sql.json({ videoId: id, transcript, errorCode: null })}, now())`;
  }
  const settings = loadConfig({}).pipeline;
  const r = await sinkBatch({ sql: t.sql, log: silentLogger(), settings }, job);
  expect(r.sunk).toBe(4);
  expect(r.quarantined).toBe(1);
  const rows = await t.sql<{ video_id: string; state: string; reason_code: string | null; reason: string | null }[]>`
    select video_id, state, reason_code, reason from batch_items where job_id = ${job} order by video_id`;
  expect(rows.filter((x) => x.state === 'sunk').map((x) => x.video_id)).toEqual(['v1', 'v2', 'v4', 'v5']);
  const bad = rows.find((x) => x.video_id === 'v3')!;
  expect(bad.state).toBe('quarantined');
  expect(bad.reason_code).toBe('unstorable');
  expect(bad.reason).toMatch(/Postgres cannot store it: .*index row/i);
  const stored = await t.sql<{ video_id: string }[]>`select video_id from transcripts order by video_id`;
  expect(stored.map((x) => x.video_id)).toEqual(['v1', 'v2', 'v4', 'v5']);
});
