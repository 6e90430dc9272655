/**
 * The embeddings twin and the client (issue #32), over real HTTP: the OpenAI wire format both
 * ways (a string or an array, `dimensions`, `usage` in cl100k_base tokens), vectors of length 1
 * that are the same every time and put "automobile" nearer to a text about cars than to one about
 * doctors, the key required when set (and never in an error), the rate limit's 429 with
 * Retry-After, scripted 500s and resets, an outage (connection refused), and the command's
 * `--help`.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEmbeddingsClient, embedQuery, EmbeddingsError } from '../../src/embeddings/client.ts';
import { startEmbeddingsTwin, type EmbeddingsTwin } from '../../src/embeddings/twin.ts';
import { EmbeddingsResponseSchema } from '../../src/embeddings/wire.ts';
import { tokenCount } from '../../src/domain/passages.ts';
import { expectExit } from '../helpers/cli.ts';
import { runCli } from '../helpers/pipeline.ts';

const KEY = 'sk-twin-test-0123456789';

let twin: EmbeddingsTwin;

beforeAll(async () => {
  twin = await startEmbeddingsTwin({ apiKey: KEY });
});
afterAll(async () => {
  await twin?.close();
});

const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
const client = (o: { dimensions?: number; apiKey?: string } = {}) =>
  createEmbeddingsClient({ baseUrl: twin.baseUrl, model: 'twin-small', apiKey: KEY, timeoutMs: 10_000, ...o });

async function errorOf(p: Promise<unknown>): Promise<EmbeddingsError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(EmbeddingsError);
  return e as EmbeddingsError;
}

describe('the embeddings twin', () => {
  it('answers the OpenAI wire format, with a string or an array, at the asked dimensions', async () => {
    const texts = ['Cars and trucks on the highway.', 'A physician treats the sick.'];
    const post = async (body: unknown) => {
      const res = await request(`${twin.baseUrl}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body: JSON.stringify(body),
      });
      expect(res.statusCode).toBe(200);
      return EmbeddingsResponseSchema.parse(await res.body.json());
    };
    const one = await post({ input: texts[0], model: 'twin-small', encoding_format: 'float' });
    expect(one.data).toHaveLength(1);
    expect(one.data[0]!.embedding).toHaveLength(256);
    const many = await post({ input: texts, model: 'twin-small', dimensions: 64 });
    expect(many.model).toBe('twin-small');
    expect(many.data.map((d) => [d.object, d.index, d.embedding.length])).toEqual([
      ['embedding', 0, 64],
      ['embedding', 1, 64],
    ]);
    const tokens = tokenCount(texts[0]!) + tokenCount(texts[1]!);
    expect(many.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    for (const d of many.data) expect(Math.hypot(...d.embedding)).toBeCloseTo(1, 9);
    // the same text, the same vector
    expect((await post({ input: texts, model: 'twin-small', dimensions: 64 })).data).toEqual(many.data);
  });

  it('puts a query nearer to the text that means it than to one that shares no meaning', async () => {
    const c = client();
    const [cars, doctors] = (await c.embed(['Cars and trucks on the highway.', 'A physician treats the sick.']))
      .vectors;
    const { vector: q } = await embedQuery(c, 'automobile');
    expect(cosine(q, cars!)).toBeGreaterThan(0.3);
    expect(cosine(q, cars!)).toBeGreaterThan(cosine(q, doctors!) + 0.3);
  });

  it('refuses a request without its key, and the key is in no error', async () => {
    const e = await errorOf(client({ apiKey: 'sk-wrong-key-000000000' }).embed(['x']));
    expect([e.code, e.status, e.retryable]).toEqual(['unauthorized', 401, false]);
    expect(`${e.message} ${String(e.stack)}`).not.toContain('sk-wrong-key');
  });

  it('answers 429 with Retry-After past its rate limit, and counts nothing it refused', async () => {
    twin.resetStats();
    // a bucket of one request (a sixth of 6 a minute), refilled every 10 s
    twin.setRateLimit({ requestsPerMinute: 6 });
    try {
      await client().embed(['first']);
      const e = await errorOf(client().embed(['second']));
      expect([e.code, e.status, e.retryable]).toEqual(['rate-limited', 429, true]);
      expect(e.retryAfterMs).toBeGreaterThan(5_000);
      expect(e.retryAfterMs).toBeLessThanOrEqual(10_000);
      expect(twin.stats()).toMatchObject({ requests: 2, inputsAnswered: 1, rateLimited: 1 });
    } finally {
      twin.setRateLimit({});
    }
  });

  it('fails on script (500, a reset before or after the work) and while down, each with its code', async () => {
    twin.resetStats();
    twin.script([{ status: 500 }, { reset: 'before' }, { reset: 'after' }]);
    expect((await errorOf(client().embed(['a']))).code).toBe('unavailable');
    expect((await errorOf(client().embed(['b']))).code).toBe('lost');
    expect((await errorOf(client().embed(['c']))).code).toBe('lost');
    // the reset after the work was paid, never received: the one input the twin bills
    expect(twin.stats()).toMatchObject({ requests: 3, inputsAnswered: 1 });
    const outage = twin.down(1_500);
    expect((await errorOf(client().embed(['d']))).code).toBe('not-sent');
    await outage;
    expect((await client().embed(['d'])).vectors).toHaveLength(1);
  });

  it('the command says what it does (--help)', async () => {
    const r = await runCli(['embeddings-twin', '--help'], {});
    expectExit(r, 0);
    expect(r.stdout).toMatch(/^Usage: videosite-ingest embeddings-twin /);
    expect(r.stdout).toContain('--requests-per-minute');
  });
});

describe('the client against a provider that does not stop answering', () => {
  it('reads an endless answer only up to its bound, then says so and closes the connection', async () => {
    const { createServer } = await import('node:http');
    let written = 0;
    let closed = false;
    const chunk = Buffer.alloc(64 * 1024, '1');
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[{"index":0,"embedding":[');
      const more = () => {
        while (!closed && written < 512 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      res.on('close', () => (closed = true));
      more();
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const { port } = server.address() as { port: number };
    try {
      const c = createEmbeddingsClient({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', timeoutMs: 30_000 });
      const err = await c.embed(['one text']).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EmbeddingsError);
      expect(err).toMatchObject({ code: 'invalid-answer' });
      expect((err as Error).message).toMatch(/larger than \d+ bytes for 1 input/);
      // the connection was dropped near the bound, not after the 512 MB the server had to send
      await vi.waitFor(() => expect(closed).toBe(true), { timeout: 10_000 });
      expect(written).toBeLessThan(64 * 1024 * 1024);
    } finally {
      server.closeAllConnections();
      await new Promise((ok) => server.close(ok));
    }
  });
});
