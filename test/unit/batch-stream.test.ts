import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import {
  readBatchItems,
  readBatchStream,
  BatchStreamError,
  OVERSIZE_RAW_PREFIX_BYTES,
  type RawBatchItem,
} from '../../src/pipeline/ingest/batch-stream.ts';

async function collect(chunks: string[]) {
  const gen = readBatchStream(
    (async function* () {
      for (const c of chunks) yield Buffer.from(c);
    })(),
  );
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
    const { head } = await collect([
      '{"results":[],"errorCode":"job-expired","status":"failed","stats":{"total":0,"succeeded":0,"failed":0}}',
    ]);
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
    const gen = readBatchItems(
      (async function* () {
        for (const c of chunks) yield typeof c === 'string' ? Buffer.from(c) : c;
      })(),
      opts,
    );
    const items: RawBatchItem[] = [];
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
      expect(head).toEqual({
        status: 'active',
        stats: { total: 6, succeeded: 2, failed: 1 },
        completedAt: null,
        sawResults: true,
      });
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
    const results = Array.from({ length: 5000 }, (_, i) => ({
      videoId: `v${i}`,
      transcript: { content: [{ text: `t"${i}\\`, offset: i, duration: 1 }], lang: 'en', availableLangs: ['en'] },
      errorCode: null,
    }));
    const text = JSON.stringify({
      status: 'completed',
      results,
      stats: { total: 5000, succeeded: 5000, failed: 0 },
      completedAt: '2024-01-01T00:00:00.000Z',
    });
    const { items } = await read(cut(text, 65_536));
    expect(items).toHaveLength(5000);
    expect(items[4999]!.value).toEqual(results[4999]);
  });

  describe('maxItemBytes', () => {
    const MAX = 10_000;
    const first = { videoId: 'first', video: { id: 'first', title: 'one' } };
    // ~50 KB, well over MAX; quotes, escapes and brackets inside strings must not confuse the scan
    const big = {
      videoId: 'big',
      transcript: {
        content: Array.from({ length: 1_000 }, (_, i) => ({ text: `w\u00e9 "${i}" ] } [ {`, offset: i, duration: 1 })),
        lang: 'en',
        availableLangs: ['en'],
      },
    };
    const third = { videoId: 'third', video: null, errorCode: 'processing' };
    const bigRaw = JSON.stringify(big);
    const answer = JSON.stringify({
      status: 'completed',
      results: [first, big, third],
      stats: { total: 3, succeeded: 3, failed: 0 },
    });

    it('yields an element over the limit as oversize (size, prefix, videoId), and reads on correctly', async () => {
      expect(Buffer.byteLength(bigRaw)).toBeGreaterThan(5 * MAX);
      for (const size of [7, 100, 1_000, 65_536]) {
        const { items, head } = await read(cut(answer, size), { maxItemBytes: MAX });
        expect(
          items.map((i) => i.index),
          `chunks of ${size}`,
        ).toEqual([0, 1, 2]);
        expect(items[0]!.value).toEqual(first);
        expect(items[0]!.oversize).toBeUndefined();
        expect(items[2]!.value).toEqual(third);
        expect(items[2]!.raw).toBe(JSON.stringify(third));
        const o = items[1]!;
        expect(o.value).toBeUndefined();
        expect(o.oversize).toEqual({ bytes: Buffer.byteLength(bigRaw), videoId: 'big' });
        expect(o.raw).toBe(Buffer.from(bigRaw).subarray(0, OVERSIZE_RAW_PREFIX_BYTES).toString('utf8'));
        expect(head).toEqual({ status: 'completed', stats: { total: 3, succeeded: 3, failed: 0 }, sawResults: true });
      }
    });

    it('parses elements at the limit as usual', async () => {
      const { items } = await read(cut(answer, 1_000), { maxItemBytes: Buffer.byteLength(bigRaw) });
      expect(items.map((i) => i.oversize)).toEqual([undefined, undefined, undefined]);
      expect(items[1]!.value).toEqual(big);
    });

    it('gives no videoId when the element does not start with one', async () => {
      const odd = JSON.stringify({ results: [{ pad: 'x'.repeat(MAX), videoId: 'late' }, 'y'.repeat(MAX + 1)] });
      const { items } = await read(cut(odd, 512), { maxItemBytes: MAX });
      expect(items.map((i) => i.oversize)).toEqual([{ bytes: MAX + 27 }, { bytes: MAX + 3 }]);
      expect(items[1]!.raw).toBe(`"${'y'.repeat(OVERSIZE_RAW_PREFIX_BYTES - 1)}`);
    });

    it('holds on to no chunk of an oversize element while scanning it', async () => {
      // one 4 MiB element in 64 KiB chunks: with the limit, the chunks already scanned can be
      // collected (the reader kept a copy of the first bytes only); without it, all are held
      const blob = { videoId: 'h', blob: 'z'.repeat(4 * 1024 * 1024) };
      const huge = JSON.stringify({ results: [blob, { videoId: 'after' }] });
      const chunks = cut(huge, 65_536);
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;

      async function chunksHeld(maxItemBytes: number | undefined): Promise<{ held: number; items: RawBatchItem[] }> {
        // the chunks' memory, not their views: a reader keeps subarrays (other views of it)
        const refs: WeakRef<ArrayBufferLike>[] = [];
        let held = -1;
        const source = async function* () {
          for (const [k, c] of chunks.entries()) {
            if (k === chunks.length - 2) {
              // near the element's end: what of the earlier chunks does the reader still hold?
              await new Promise((resolve) => setImmediate(resolve));
              gc();
              held = refs.filter((r) => r.deref() !== undefined).length;
            }
            const copy = Buffer.from(c);
            refs.push(new WeakRef(copy.buffer));
            yield copy;
          }
        };
        const items: RawBatchItem[] = [];
        for (const gen = readBatchItems(source(), maxItemBytes === undefined ? {} : { maxItemBytes }); ;) {
          const r = await gen.next();
          if (r.done) break;
          items.push(r.value);
        }
        return { held, items };
      }

      const bounded = await chunksHeld(MAX);
      expect(bounded.items.map((i) => i.oversize?.videoId ?? (i.value as { videoId: string }).videoId)).toEqual([
        'h',
        'after',
      ]);
      expect(bounded.items[0]!.oversize?.bytes).toBe(Buffer.byteLength(JSON.stringify(blob)));
      expect(bounded.held).toBeLessThanOrEqual(2);
      // the measurement itself: without a limit the element's chunks are all held
      const unbounded = await chunksHeld(undefined);
      expect(unbounded.items[0]!.value).toEqual(blob);
      expect(unbounded.held).toBeGreaterThan(chunks.length / 2);
    });

    it('skips an unknown top-level field over the limit, and fails on a head field over it', async () => {
      const extra = JSON.stringify({ status: 'completed', debug: 'd'.repeat(MAX * 2), results: [first] });
      const { items, head } = await read(cut(extra, 1_000), { maxItemBytes: MAX });
      expect(items.map((i) => i.value)).toEqual([first]);
      expect(head.status).toBe('completed');
      const badHead = JSON.stringify({ status: 's'.repeat(MAX * 2), results: [] });
      await expect(read(cut(badHead, 1_000), { maxItemBytes: MAX })).rejects.toBeInstanceOf(BatchStreamError);
    });

    it('still fails on a truncated oversize element', async () => {
      await expect(
        read(cut(answer.slice(0, answer.indexOf('"third"') - 100), 1_000), { maxItemBytes: MAX }),
      ).rejects.toBeInstanceOf(BatchStreamError);
    });
  });
});
