import { describe, expect, it } from 'vitest';
import { readBatchItems, readBatchStream, BatchStreamError } from '../../src/pipeline/batch-stream.ts';

async function collect(chunks: string[]) {
  const gen = readBatchStream((async function* () {
    for (const c of chunks) yield Buffer.from(c);
  })());
  const items: unknown[] = [];
  for (;;) {
    const r = await gen.next();
    if (r.done) return { items, head: r.value };
    items.push(r.value);
  }
}

describe('readBatchStream', () => {
  const doc = JSON.stringify({
    status: 'active',
    results: [
      { videoId: 'a', video: null, errorCode: 'processing' },
      { videoId: 'b', transcript: { content: 'hi \u00e9', lang: 'en', availableLangs: ['en'] } },
      { videoId: 'c' },
    ],
    stats: { total: 3, succeeded: 1, failed: 0 },
    completedAt: null,
  });

  it('yields every item and the head, whatever the chunking', async () => {
    for (const size of [1, 7, 64, doc.length]) {
      const chunks: string[] = [];
      for (let i = 0; i < doc.length; i += size) chunks.push(doc.slice(i, i + size));
      const { items, head } = await collect(chunks);
      expect(items).toEqual(JSON.parse(doc).results);
      expect(head).toEqual({
        status: 'active',
        stats: { total: 3, succeeded: 1, failed: 0 },
        completedAt: null,
        sawResults: true,
      });
    }
  });

  it('keeps null and absent distinct', async () => {
    const { items } = await collect([doc]);
    expect(items[0]).toHaveProperty('video', null);
    expect(items[2]).not.toHaveProperty('video');
  });

  it('reads head fields placed after or before results', async () => {
    const { head } = await collect(['{"results":[],"errorCode":"job-expired","status":"failed","stats":{"total":0,"succeeded":0,"failed":0}}']);
    expect(head.status).toBe('failed');
    expect(head.errorCode).toBe('job-expired');
  });

  it('fails on a truncated body', async () => {
    await expect(collect([doc.slice(0, doc.length - 20)])).rejects.toBeInstanceOf(BatchStreamError);
  });

  it('fails on a body that is not JSON', async () => {
    await expect(collect(['<html>502 Bad Gateway</html>'])).rejects.toBeInstanceOf(BatchStreamError);
  });

  it('reports a missing results array', async () => {
    const { head, items } = await collect(['{"status":"queued","stats":{"total":0,"succeeded":0,"failed":0}}']);
    expect(items).toEqual([]);
    expect(head.sawResults).toBe(false);
  });
});

describe('readBatchItems (the byte scanner under readBatchStream)', () => {
  async function read(chunks: (string | Buffer)[], opts?: Parameters<typeof readBatchItems>[1]) {
    const gen = readBatchItems((async function* () {
      for (const c of chunks) yield typeof c === 'string' ? Buffer.from(c) : c;
    })(), opts);
    const items: { value: unknown; raw: string; index: number }[] = [];
    for (;;) {
      const r = await gen.next();
      if (r.done) return { items, head: r.value };
      items.push(r.value);
    }
  }

  /** every way of cutting `text` into chunks of `size` bytes (multi-byte characters cut too) */
  function cut(text: string, size: number): Buffer[] {
    const bytes = Buffer.from(text, 'utf8');
    const out: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
    return out;
  }

  const tricky = [
    { videoId: 'a', transcript: { content: 'quote " backslash \\ end\\', lang: 'en', availableLangs: ['en'] } },
    { videoId: 'b', transcript: { content: [{ text: '] } , [ { "', offset: 0, duration: 1.5 }], lang: 'ja' } },
    { videoId: 'c\u00e9\u{1F3AE}', video: null, errorCode: 'processing' },
    { videoId: 'd', transcript: { content: '\\\\"\\"', lang: 'de', availableLangs: [] } },
    { videoId: 'e', video: { id: 'e', title: '\u65e5\u672c\u8a9e \ud83c\udfae', tags: [[], {}, [[1]]], n: -1.5e-7 } },
    { videoId: 'f' },
  ];
  const doc = `{ "status" : "active",\n "results" : [ ${tricky.map((t) => JSON.stringify(t)).join(' ,\n ')} ] ,"stats":{"total":6,"succeeded":2,"failed":1},"completedAt":null}`;

  it('yields each item with its exact text and position, whatever the chunking', async () => {
    for (const size of [1, 2, 3, 5, 13, 64, 4096]) {
      const { items, head } = await read(cut(doc, size));
      expect(items.map((i) => i.value)).toEqual(tricky);
      expect(items.map((i) => i.raw)).toEqual(tricky.map((t) => JSON.stringify(t)));
      expect(items.map((i) => i.index)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(head).toEqual({ status: 'active', stats: { total: 6, succeeded: 2, failed: 1 }, completedAt: null, sawResults: true });
    }
  });

  it('takes items of any JSON type', async () => {
    const { items } = await read(['{"results":[1, "two" ,null,true,[3],{"x":"]"}]}']);
    expect(items.map((i) => i.value)).toEqual([1, 'two', null, true, [3], { x: ']' }]);
  });

  it('drops items the caller already has unread, and still counts their positions', async () => {
    const seen: string[] = [];
    for (const size of [1, 7, 4096]) {
      seen.length = 0;
      const { items } = await read(cut(doc, size), {
        skip: (id) => {
          seen.push(id);
          return id === 'a' || id === 'c\u00e9\u{1F3AE}';
        },
      });
      expect(items.map((i) => (i.value as { videoId: string }).videoId)).toEqual(['b', 'd', 'e', 'f']);
      expect(items.map((i) => i.index)).toEqual([1, 3, 4, 5]);
      expect(seen).toEqual(['a', 'b', 'c\u00e9\u{1F3AE}', 'd', 'e', 'f']);
    }
  });

  it('asks about an item only when it starts with its videoId and the ID has no escapes', async () => {
    const asked: string[] = [];
    const body = `{"results":[{"x":1,"videoId":"late"},{"videoId":"esc\\"aped"},{"videoId":"ok"}]}`;
    const { items } = await read([body], { skip: (id) => (asked.push(id), true) });
    expect(asked).toEqual(['ok']);
    expect(items.map((i) => i.value)).toEqual([{ x: 1, videoId: 'late' }, { videoId: 'esc"aped' }]);
  });

  it('fails on broken structure between items, in an item, or after the object', async () => {
    for (const bad of [
      '{"results":[{"a":1} {"b":2}]}',
      '{"results":[{"a":1},,{"b":2}]}',
      '{"results":[{"a":tru}]}',
      '{"results":[]} trailing',
      '{"status" "x","results":[]}',
      '{"results":[{"a":"unterminated}]}',
      '{"results":{"a":1}}',
    ]) {
      await expect(read([bad]), bad).rejects.toBeInstanceOf(BatchStreamError);
    }
  });

  it('reads a 5000-item answer cut into network-sized chunks', async () => {
    const results = Array.from({ length: 5000 }, (_, i) => ({ videoId: `v${i}`, transcript: { content: [{ text: `t"${i}\\`, offset: i, duration: 1 }], lang: 'en', availableLangs: ['en'] }, errorCode: null }));
    const text = JSON.stringify({ status: 'completed', results, stats: { total: 5000, succeeded: 5000, failed: 0 }, completedAt: '2024-01-01T00:00:00.000Z' });
    const { items } = await read(cut(text, 65_536));
    expect(items).toHaveLength(5000);
    expect(items[4999]!.value).toEqual(results[4999]);
  });
});
