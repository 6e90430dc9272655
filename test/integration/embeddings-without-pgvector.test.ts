/**
 * Embeddings on a Postgres server without pgvector (issue #32): a real server of our own whose
 * install lacks the extension's files (test/helpers/pg-cluster.ts `installWithoutPgvector`).
 * `migrate` succeeds and the vectors' table is simply absent; `status` says what to install;
 * the embedder logs that once and stores nothing; text search works as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/connection.ts';
import { EMBEDDINGS_CONCURRENCY } from '../../src/config.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../../src/db/transcripts.ts';
import { startEmbeddingsTwin, type EmbeddingsTwin } from '../../src/embeddings/twin.ts';
import { createLogger } from '../../src/log.ts';
import { drainEmbeddings, startEmbedder } from '../../src/pipeline/services/embedder.ts';
import { drainSearchIndex } from '../../src/pipeline/services/search-index.ts';
import { expectExit } from '../helpers/cli.ts';
import { installWithoutPgvector, startPgCluster, type PgCluster } from '../helpers/pg-cluster.ts';
import { runCli, waitFor } from '../helpers/pipeline.ts';

let cluster: PgCluster;
let twin: EmbeddingsTwin;
let url: string;

beforeAll(async () => {
  cluster = await startPgCluster({ binDir: installWithoutPgvector() });
  url = cluster.url('vsi_without_vector');
  twin = await startEmbeddingsTwin();
}, 120_000);
afterAll(async () => {
  await twin?.close();
  await cluster?.destroy();
});

describe('without pgvector', () => {
  it('migrates, says what to install, embeds nothing, and text search works', async () => {
    const env = { DATABASE_URL: url, LOG_LEVEL: 'warn', EMBEDDINGS_BASE_URL: twin.baseUrl };
    expectExit(await runCli(['migrate'], env), 0);
    const db = createDb(url, { max: 2 });
    const { sql } = db;
    try {
      const [t] = await sql<{ exists: boolean }[]>`select to_regclass('embeddings') is not null as exists`;
      expect(t!.exists).toBe(false);

      await sql`insert into videos (id, title) values ('vidNoVector1', 'a talk')`;
      const content = [{ text: 'the carburettor of an old tractor', offset: 0, duration: 2_000 }];
      await upsertTranscripts(sql, [
        transcriptRowFromApi('vidNoVector1', { content, lang: 'en', availableLangs: ['en'] }, 'job-nv-1'),
      ]);
      await drainSearchIndex({ sql, passages: { size: 256, overlap: 32 } });

      const status = await runCli(['status'], env);
      expectExit(status, 0);
      expect(status.stdout).toMatch(
        /embeddings: unavailable: the Postgres server lacks the pgvector extension: install it/,
      );

      const embeddings = {
        baseUrl: twin.baseUrl,
        model: 'twin-nv',
        dimensions: undefined,
        apiKey: undefined,
        tokensPerDay: undefined,
        batchSize: 8,
        timeoutMs: 5_000,
        concurrency: EMBEDDINGS_CONCURRENCY,
      };
      const lines: string[] = [];
      const log = createLogger({ level: 'info', destination: { write: (line: string) => void lines.push(line) } });
      expect(await drainEmbeddings({ sql, log, embeddings })).toEqual({ embedded: 0, stopped: 'not-installed' });
      const embedder = startEmbedder({ sql, log, embeddings });
      try {
        const warned = await waitFor(
          async () =>
            lines
              .map((l) => JSON.parse(l) as Record<string, unknown>)
              .find((l) => l.event === 'embedder.store_unavailable'),
          10_000,
          'the embedder to say what is missing',
        );
        expect(warned).toMatchObject({ state: 'not-installed', level: 40 });
        expect(String(warned.hint)).toContain('pgvector');
      } finally {
        await embedder.stop();
      }
      expect(twin.stats().requests).toBe(0);

      const search = await runCli(['search', 'carburettor', '--json'], env);
      expectExit(search, 0);
      expect(search.stdout).toContain('vidNoVector1');
    } finally {
      await db.close();
    }
  });
});
