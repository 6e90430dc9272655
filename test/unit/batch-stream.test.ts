import { describe, expect, it } from 'vitest';
import { readBatchStream, BatchStreamError } from '../../src/pipeline/batch-stream.ts';

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
