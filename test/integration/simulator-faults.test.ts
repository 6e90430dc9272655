/**
 * Fault injection and the admin API of the simulator: scripted answers (reset, 500, hang,
 * stalled, cut or trickled body, processed-then-reset), random faults set at runtime, latency, the clock and
 * request statistics.
 */
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AccountSchema, BatchResultsSchema, ErrorBodySchema, JobIdSchema } from '../../src/api/schemas.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { admin, call } from '../helpers/sim-http.ts';

let sim: Simulator;
let channelId: string;
let jobId: string;

beforeAll(async () => {
  sim = await startSimulator({ clockSpeed: 0, catalog: { channels: 1 } });
  channelId = sim.catalog.channels()[0]!.id;
  jobId = JobIdSchema.parse(
    (await call(sim, 'POST', '/videosite/video/batch', { body: { channelId, limit: 5 } })).json,
  ).jobId;
  sim.clock.advance(5000);
});
afterEach(() => {
  sim.clearFaults();
});
afterAll(async () => {
  await sim.close();
});

const used = async () => AccountSchema.parse((await call(sim, 'GET', '/me')).json).usedCredits;

describe('scripted answers', () => {
  it('reset, then 500 with an HTML body, then the real answer; counted per endpoint template', async () => {
    sim.resetStats();
    sim.script([
      { match: 'GET /videosite/batch/*', reset: true },
      { match: 'GET /videosite/batch/*', status: 500, body: '<html>oops</html>' },
    ]);
    await expect(call(sim, 'GET', `/videosite/batch/${jobId}`)).rejects.toThrow();
    const second = await call(sim, 'GET', `/videosite/batch/${jobId}`);
    expect(second.status).toBe(500);
    expect(second.text).toBe('<html>oops</html>');
    const third = await call(sim, 'GET', `/videosite/batch/${jobId}`);
    expect(third.status).toBe(200);
    expect(BatchResultsSchema.parse(third.json).status).toBe('completed');
    expect(sim.stats().byEndpoint['GET /videosite/batch/{jobId}']).toEqual({
      total: 3,
      byStatus: { reset: 1, '500': 1, '200': 1 },
    });
  });

  it('steps only match their method and path, and are consumed in order', async () => {
    sim.script([
      {
        match: 'POST /videosite/*/batch',
        status: 503,
        body: { error: 'internal-error', message: 'busy', details: 'x' },
      },
    ]);
    expect((await call(sim, 'GET', '/me')).status).toBe(200);
    const r = await call(sim, 'POST', '/videosite/transcript/batch', { body: { channelId, limit: 1 } });
    expect(r.status).toBe(503);
    expect(ErrorBodySchema.parse(r.json).message).toBe('busy');
    expect((await call(sim, 'POST', '/videosite/transcript/batch', { body: { channelId, limit: 1 } })).status).toBe(
      200,
    );
  });

  it('a processed reset loses the answer of a batch that was created and charged', async () => {
    const before = await used();
    sim.script([{ match: 'POST /videosite/video/batch', reset: true, process: true }]);
    await expect(call(sim, 'POST', '/videosite/video/batch', { body: { channelId, limit: 3 } })).rejects.toThrow();
    expect(await used()).toBe(before + 4);
  });

  it('hang never sends headers; stallBody sends part of the body; close() ends both', async () => {
    const other = await startSimulator({ catalog: { channels: 1 } });
    other.script([
      { match: 'GET /me', hang: true },
      { match: 'GET /me', stallBody: true },
    ]);
    await expect(
      request(`${other.baseUrl}/me`, { headers: { 'x-api-key': other.apiKey }, headersTimeout: 300 }),
    ).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
    const stalled = await request(`${other.baseUrl}/me`, { headers: { 'x-api-key': other.apiKey }, bodyTimeout: 300 });
    expect(stalled.statusCode).toBe(200);
    await expect(stalled.body.text()).rejects.toMatchObject({ code: 'UND_ERR_BODY_TIMEOUT' });
    // a request left hanging without a client timeout: close() must still end promptly
    other.script([{ match: 'GET /me', hang: true }]);
    const hanging = request(`${other.baseUrl}/me`, { headers: { 'x-api-key': other.apiKey } });
    while (other.stats().byEndpoint['GET /me']?.byStatus.hang !== 2) await new Promise((r) => setTimeout(r, 10));
    const t0 = Date.now();
    await other.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    await expect(hanging).rejects.toThrow();
  });

  it('truncateAt cuts the real (streamed) answer at that share of its bytes, after cutAfterMs; trickle sends the rest a byte at a time', async () => {
    const headers = { 'x-api-key': sim.apiKey };
    const whole = await request(`${sim.baseUrl}/videosite/batch/${jobId}`, { headers });
    const bytes = Buffer.byteLength(await whole.body.text());
    sim.script([
      { match: 'GET /videosite/batch/*', process: true, truncateAt: 0.9, cutAfterMs: 300 },
      { match: 'GET /videosite/batch/*', process: true, trickle: { afterFraction: 0.5, byteEveryMs: 50 } },
    ]);
    const cut = await request(`${sim.baseUrl}/videosite/batch/${jobId}`, { headers });
    expect(Number(cut.headers['content-length'])).toBe(bytes);
    let got = 0;
    const t0 = Date.now();
    // read as it arrives: bytes still unread when the connection closes are discarded by undici
    await expect(
      (async () => {
        for await (const c of cut.body) got += (c as Buffer).length;
      })(),
    ).rejects.toThrow();
    expect(got).toBe(Math.floor(bytes * 0.9));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    const slow = await request(`${sim.baseUrl}/videosite/batch/${jobId}`, { headers });
    let received = 0;
    const t1 = Date.now();
    for await (const c of slow.body) {
      received += (c as Buffer).length;
      if (Date.now() - t1 > 400) break; // a few bytes trickled: enough
    }
    // half at once, then about a byte per 50 ms
    expect(received).toBeGreaterThan(Math.floor(bytes * 0.5));
    expect(received).toBeLessThan(Math.floor(bytes * 0.5) + 15);
  });

  it('scripts and faults can be set through the admin API', async () => {
    const r = await admin(sim, 'POST', '/script', {
      steps: [
        {
          match: 'GET /me',
          status: 429,
          headers: { 'retry-after': '3' },
          body: { error: 'limit-exceeded', message: 'slow down', details: '' },
        },
      ],
    });
    expect(r.json).toEqual({ pending: 1 });
    const limited = await call(sim, 'GET', '/me');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('3');
    const bad = await admin(sim, 'POST', '/script', { steps: [{ match: 'fetch me', status: 200 }] });
    expect(bad.status).toBe(400);
    expect(ErrorBodySchema.parse(bad.json).message).toContain('steps[0].match');
  });
});

describe('random faults', () => {
  it('badGatewayRate answers 502 with a non-JSON body, errorRate 500 with an Error body; neither charges', async () => {
    const before = await used();
    expect((await admin(sim, 'POST', '/faults', { badGatewayRate: 1 })).status).toBe(200);
    const gw = await call(sim, 'GET', '/videosite/channel', { query: { id: channelId } });
    expect(gw.status).toBe(502);
    expect(gw.headers['content-type']).toContain('text/html');
    expect(gw.json).toBeUndefined();
    sim.setFaults({ badGatewayRate: 0, errorRate: 1 });
    const err = await call(sim, 'GET', '/videosite/channel', { query: { id: channelId } });
    expect(err.status).toBe(500);
    expect(ErrorBodySchema.parse(err.json).error).toBe('internal-error');
    expect((await admin(sim, 'DELETE', '/faults')).json).toMatchObject({ errorRate: 0, badGatewayRate: 0 });
    expect(await used()).toBe(before);
  });

  it('a partial error rate fails some requests and lets the others through', async () => {
    sim.setFaults({ errorRate: 0.5 });
    const statuses = [];
    for (let i = 0; i < 30; i++) statuses.push((await call(sim, 'GET', `/videosite/batch/${jobId}`)).status);
    expect(statuses.filter((s) => s === 500).length).toBeGreaterThan(3);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(3);
  });

  it('truncateRate cuts bodies short, JSON and streamed alike', async () => {
    sim.setFaults({ truncateRate: 1 });
    await expect(call(sim, 'GET', '/videosite/channel', { query: { id: channelId } })).rejects.toThrow();
    await expect(call(sim, 'GET', `/videosite/batch/${jobId}`)).rejects.toThrow();
  });

  it('resetRate handles the request, then resets the connection', async () => {
    const before = await used();
    sim.setFaults({ resetRate: 1 });
    await expect(call(sim, 'GET', '/videosite/channel', { query: { id: channelId } })).rejects.toThrow();
    sim.clearFaults();
    expect(await used()).toBe(before + 1);
  });

  it('schemaViolationRate answers 2xx bodies that are JSON but break their schema', async () => {
    sim.setFaults({ schemaViolationRate: 1 });
    const me = await call(sim, 'GET', '/me');
    expect(me.status).toBe(200);
    expect(AccountSchema.safeParse(me.json).success).toBe(false);
    const batch = await call(sim, 'GET', `/videosite/batch/${jobId}`);
    expect(batch.status).toBe(200);
    expect(batch.json).toBeDefined();
    expect(BatchResultsSchema.safeParse(batch.json).success).toBe(false);
    // error answers stay what they are
    const missing = await call(sim, 'GET', '/videosite/batch/unknown');
    expect(ErrorBodySchema.parse(missing.json).error).toBe('not-found');
  });

  it('latency delays every answer', async () => {
    sim.setFaults({ latencyMs: 150 });
    const t0 = Date.now();
    expect((await call(sim, 'GET', '/me')).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('refuses invalid fault settings naming the field', async () => {
    const r = await admin(sim, 'POST', '/faults', { errorRate: 2 });
    expect(r.status).toBe(400);
    expect(ErrorBodySchema.parse(r.json).message).toContain('errorRate');
  });
});

describe('admin API', () => {
  it('moves the clock and refuses to move it back', async () => {
    const t0 = (await admin(sim, 'GET', '/clock')).json as { nowMs: number };
    const t1 = (await admin(sim, 'POST', '/clock', { advanceMs: 5000 })).json as { nowMs: number };
    expect(t1.nowMs - t0.nowMs).toBe(5000);
    expect((await admin(sim, 'POST', '/clock', { advanceMs: -1 })).status).toBe(400);
    expect((await admin(sim, 'POST', '/clock', { speed: 0 })).status).toBe(200);
  });

  it('lists the catalog and adds videos to a channel', async () => {
    const cat = (await admin(sim, 'GET', '/catalog')).json as { channels: Array<{ id: string; videoCount: number }> };
    const n = cat.channels[0]!.videoCount;
    const added = (await admin(sim, 'POST', `/catalog/${channelId}/videos`, { count: 2 })).json as {
      videoIds: string[];
    };
    expect(added.videoIds).toHaveLength(2);
    const listed = (await admin(sim, 'GET', `/catalog/${channelId}/videos`)).json as { videoIds: string[] };
    expect(listed.videoIds).toHaveLength(n + 2);
    expect(listed.videoIds.slice(0, 2)).toEqual(added.videoIds);
    expect((await admin(sim, 'POST', `/catalog/${channelId}/videos`, { count: 0 })).status).toBe(400);
    expect((await admin(sim, 'POST', '/catalog/UCnope/videos', { count: 1 })).status).toBe(404);
  });

  it('reports and resets request statistics', async () => {
    await admin(sim, 'POST', '/stats/reset');
    await call(sim, 'GET', '/me');
    await call(sim, 'GET', '/videosite/channel', { query: { id: channelId } });
    await call(sim, 'GET', '/videosite/channel', { query: { id: 'nobody' } });
    const s = (await admin(sim, 'GET', '/stats')).json as ReturnType<Simulator['stats']>;
    expect(s.total).toBe(3);
    expect(s.byEndpoint['GET /videosite/channel']).toEqual({ total: 2, byStatus: { '200': 1, '404': 1 } });
    expect(s.creditsCharged).toBe(1);
  });

  it('changes job settings for new batches', async () => {
    expect((await admin(sim, 'POST', '/jobs', { queuedMs: 10_000 })).json).toMatchObject({ queuedMs: 10_000 });
    const id = JobIdSchema.parse(
      (await call(sim, 'POST', '/videosite/video/batch', { body: { channelId, limit: 1 } })).json,
    ).jobId;
    sim.clock.advance(5000);
    expect(BatchResultsSchema.parse((await call(sim, 'GET', `/videosite/batch/${id}`)).json).status).toBe('queued');
    await admin(sim, 'POST', '/jobs', { queuedMs: 1000 });
    expect((await admin(sim, 'POST', '/jobs', { itemsPerSecond: 0 })).status).toBe(400);
  });
});
