/**
 * Vectors for the passages of a test database, through the real client and storage functions
 * (what the embedder does, without its queue): `only` picks the texts to embed.
 */
import type { Sql } from '../../src/db/connection.ts';
import { ensureModelIndex, storeVectors } from '../../src/db/embeddings.ts';
import type { EmbeddingsClient } from '../../src/embeddings/client.ts';

export async function embedPassages(
  sql: Sql,
  client: EmbeddingsClient,
  only: (text: string) => boolean = () => true,
): Promise<number> {
  const rows = (
    await sql<{ sha256: string; text: string; tokens: number }[]>`
    select distinct on (sha256) sha256, text, tokens from passages order by sha256`
  ).filter((r) => only(r.text));
  if (rows.length === 0) return 0;
  const { vectors } = await client.embed(rows.map((r) => r.text));
  await storeVectors(
    sql,
    client.model,
    rows.map((r, i) => ({ sha256: r.sha256, vector: vectors[i]!, tokens: r.tokens })),
  );
  await ensureModelIndex(sql, client.model, vectors[0]!.length);
  return rows.length;
}
