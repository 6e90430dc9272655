/**
 * The simulator's catalog changes under a running client as a real platform does: edits made over
 * the admin API (`POST /__admin/videos/{id}`) show on the single-video endpoints and in batches
 * created after them, also when an earlier answer of that video is kept in the item cache.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Transcript, Video } from '../../src/api/schemas.ts';
import { startSimulator, type Simulator, type VideoInfo } from '../../src/simulator/server.ts';
import { LANGS } from '../../src/simulator/text.ts';

let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 7,
    catalog: { channels: 1, channelSizes: [80], privateShare: 0, goneShare: 0 },
    jobs: { queuedMs: 0, itemsPerSecond: 1_000_000, failRate: 0, itemErrorRate: 0 },
    itemCacheBytes: 10_000_000,
  });
});

afterAll(async () => {
  await sim?.close();
});

const adminUrl = () => `${sim.baseUrl.replace(/\/v1$/, '')}/__admin`;
const headers = () => ({ 'x-api-key': sim.apiKey, 'content-type': 'application/json' });

async function edit(videoId: string, patch: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${adminUrl()}/videos/${videoId}`, { method: 'POST', body: JSON.stringify(patch) });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

async function get(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${sim.baseUrl}/videosite/${path}`, { headers: headers() });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

interface Item {
  videoId: string;
  video?: Video | null;
  transcript?: Transcript | null;
  errorCode: string | null;
}

async function createBatch(kind: 'video' | 'transcript', videoIds: string[], lang?: string): Promise<string> {
  const r = await fetch(`${sim.baseUrl}/videosite/${kind}/batch`, {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({ videoIds, ...(lang ? { lang } : {}) }),
  });
  expect(r.status).toBeLessThan(300);
  return ((await r.json()) as { jobId: string }).jobId;
}

async function readBatch(jobId: string): Promise<Item[]> {
  for (let tries = 0; tries < 100; tries++) {
    const r = await fetch(`${sim.baseUrl}/videosite/batch/${jobId}`, { headers: headers() });
    const body = (await r.json()) as { status: string; results: Item[] };
    if (body.status === 'completed') return body.results;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`batch ${jobId} did not complete`);
}

async function batchItem(kind: 'video' | 'transcript', videoId: string, lang?: string): Promise<Item> {
  return (await readBatch(await createBatch(kind, [videoId], lang)))[0]!;
}

/** Distinct public videos with at least one transcript language, one per test. */
let nextVideo = 0;
function freshVideo(): VideoInfo {
  const ids = sim.catalog.videoIds(sim.catalog.channels()[0]!.id)!;
  while (nextVideo < ids.length) {
    const info = sim.catalog.videoInfo(ids[nextVideo++]!)!;
    if (info.fate === 'public' && info.transcriptLanguages.length > 0) return info;
  }
  throw new Error('no public video with a transcript left');
}

describe('simulator catalog edits', () => {
  it('metadata: the video endpoint, a later batch and videoInfo show the edit', async () => {
    const v = freshVideo();
    const before = (await get(`video?id=${v.id}`)).body as unknown as Video;
    const patch = {
      title: 'Edited title',
      description: 'New text',
      tags: ['a', 'b'],
      durationS: 4321,
      thumbnail: 'https://img.example/x.jpg',
    };
    const res = await edit(v.id, patch);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: v.id, durationS: 4321 });

    const after = (await get(`video?id=${v.id}`)).body as unknown as Video;
    expect(before.title).not.toBe('Edited title');
    expect(after).toMatchObject({
      title: 'Edited title',
      description: 'New text',
      tags: ['a', 'b'],
      duration: 4321,
      thumbnail: 'https://img.example/x.jpg',
    });
    // what was not edited stays as generated
    expect(after.uploadDate).toEqual(before.uploadDate);
    expect(after.transcriptLanguages).toEqual(before.transcriptLanguages);
    expect((await batchItem('video', v.id)).video).toEqual(after);
    expect(sim.catalog.video(v.id)).toEqual(after);

    await edit(v.id, { thumbnail: null });
    expect((await get(`video?id=${v.id}`)).body).not.toHaveProperty('thumbnail');
    expect((await batchItem('video', v.id)).video).not.toHaveProperty('thumbnail');
  });

  it('a language added turns a fallback into a delivery in that language; removed, the transcript is unavailable', async () => {
    const v = freshVideo();
    const missing = LANGS.find((l) => !v.transcriptLanguages.includes(l))!;
    const fallback = (await get(`transcript?videoId=${v.id}&lang=${missing}`)).body as unknown as Transcript;
    expect(fallback.lang).toBe(v.transcriptLanguages[0]);
    expect((await batchItem('transcript', v.id, missing)).transcript!.lang).toBe(v.transcriptLanguages[0]);

    const langs = [...v.transcriptLanguages, missing];
    expect((await edit(v.id, { transcriptLanguages: langs })).body).toMatchObject({ transcriptLanguages: langs });
    const single = (await get(`transcript?videoId=${v.id}&lang=${missing}`)).body as unknown as Transcript;
    expect(single.lang).toBe(missing);
    expect(single.availableLangs).toEqual(langs);
    const item = await batchItem('transcript', v.id, missing);
    expect(item.transcript).toMatchObject({ lang: missing, availableLangs: langs });
    expect(item.transcript!.content).toEqual(single.content);
    // another language's transcript also lists the new one
    expect(
      ((await get(`transcript?videoId=${v.id}&lang=${langs[0]}`)).body as unknown as Transcript).availableLangs,
    ).toEqual(langs);
    expect(((await get(`video?id=${v.id}`)).body as unknown as Video).transcriptLanguages).toEqual(langs);

    await edit(v.id, { transcriptLanguages: [] });
    expect((await get(`transcript?videoId=${v.id}`)).body).toMatchObject({ error: 'transcript-unavailable' });
    expect((await batchItem('transcript', v.id)).errorCode).toBe('transcript-unavailable');
  });

  it('a re-uploaded transcript has other text; revision 0 is the generated one again', async () => {
    const v = freshVideo();
    const lang = v.transcriptLanguages[0]!;
    const original = ((await get(`transcript?videoId=${v.id}&lang=${lang}`)).body as unknown as Transcript).content;
    await edit(v.id, { transcriptRevisions: { [lang]: 1 } });
    const revised = ((await get(`transcript?videoId=${v.id}&lang=${lang}`)).body as unknown as Transcript).content;
    expect(revised).not.toEqual(original);
    expect((await batchItem('transcript', v.id, lang)).transcript!.content).toEqual(revised);
    await edit(v.id, { transcriptRevisions: { [lang]: 0 } });
    expect(((await get(`transcript?videoId=${v.id}&lang=${lang}`)).body as unknown as Transcript).content).toEqual(
      original,
    );
  });

  it('taken down (gone, private) and brought back: the endpoints and batch items follow', async () => {
    const v = freshVideo();
    await edit(v.id, { fate: 'gone' });
    expect((await get(`video?id=${v.id}`)).status).toBe(404);
    expect((await batchItem('video', v.id)).errorCode).toBe('not-found');
    expect((await batchItem('transcript', v.id)).errorCode).toBe('not-found');
    expect(sim.catalog.videoInfo(v.id)!.fate).toBe('gone');

    await edit(v.id, { fate: 'private' });
    expect((await get(`video?id=${v.id}`)).status).toBe(403);
    expect((await batchItem('video', v.id)).errorCode).toBe('forbidden');

    await edit(v.id, { fate: 'public' });
    expect((await get(`video?id=${v.id}`)).status).toBe(200);
    const back = await batchItem('video', v.id);
    expect(back.errorCode).toBeNull();
    expect(back.video!.id).toBe(v.id);
  });

  it('a cached item is not served stale after an edit of its video', async () => {
    const [a, b] = [freshVideo(), freshVideo()];
    const jobId = await createBatch('video', [a.id, b.id]);
    const first = await readBatch(jobId);
    // a repeated read comes from the cache
    expect(await readBatch(jobId)).toEqual(first);
    await edit(a.id, { title: 'Renamed while cached' });
    const again = await readBatch(jobId);
    expect(again[0]!.video!.title).toBe('Renamed while cached');
    expect(again[1]).toEqual(first[1]);
  });

  it('refuses an unknown video (404) and a bad field (400 naming it)', async () => {
    const v = freshVideo();
    expect((await edit('nope-not-a-video', { title: 'x' })).status).toBe(404);
    for (const [patch, field] of [
      [{ durationS: -1 }, 'durationS'],
      [{ fate: 'deleted' }, 'fate'],
      [{ transcriptLanguages: ['en', 'en'] }, 'transcriptLanguages'],
      [{ transcriptRevisions: { en: 1.5 } }, 'transcriptRevisions'],
      [{ colour: 'red' }, 'colour'],
    ] as const) {
      const res = await edit(v.id, patch);
      expect(res.status, JSON.stringify(patch)).toBe(400);
      expect(JSON.stringify(res.body)).toContain(field);
    }
    // nothing refused was applied
    expect(sim.catalog.videoInfo(v.id)).toEqual(v);
  });
});
