/**
 * Which model's vectors search by meaning uses (issue #32), decided here only: the configured
 * EMBEDDINGS_MODEL once its vectors cover every passage (once: an idle embedder records it, and
 * passages added later are embedded as they come, without taking the model out of use); while a change of model re-embeds in
 * the background, the model embedded most recently that still covers them all (its queries are
 * embedded under its own name: the provider serves both); with neither, the configured one,
 * which finds only what it covers so far. `search`, the MCP tool, the admin page and `status`
 * all ask this.
 */
import type { Queryable } from '../../db/connection.ts';
import { readEmbeddingsStoreState, type ModelSpace } from '../../db/embeddings.ts';
import { embeddedModels, modelCoversPassages } from '../../db/semantic-search.ts';

export type SearchModel =
  /** EMBEDDINGS_BASE_URL is not set */
  | { state: 'off' }
  /** no `embeddings` table: the Postgres server lacks pgvector */
  | { state: 'no-pgvector' }
  /** pgvector is there, its table not yet created (an embedder creates it as it starts) */
  | { state: 'not-created' }
  | {
      state: 'ready';
      model: string;
      /** the vectors' dimensions when known before a query is embedded (EMBEDDINGS_DIMENSIONS, or the stored ones of a previous model) */
      dimensions: number | undefined;
      /** every passage has a vector of it */
      covers: boolean;
      /** it is EMBEDDINGS_MODEL (not a previous model standing in) */
      configured: boolean;
    };

export async function searchModel(sql: Queryable, embeddings: ModelSpace | undefined): Promise<SearchModel> {
  if (embeddings === undefined) return { state: 'off' };
  const store = await readEmbeddingsStoreState(sql);
  if (store !== 'ready') return { state: store === 'not-installed' ? 'no-pgvector' : 'not-created' };
  const configured = { model: embeddings.model, dimensions: embeddings.dimensions };
  if (await modelCoversPassages(sql, configured.model, configured.dimensions))
    return { state: 'ready', ...configured, covers: true, configured: true };
  for (const m of await embeddedModels(sql)) {
    if (m.model === configured.model) continue;
    if (await modelCoversPassages(sql, m.model, m.dimensions))
      return { state: 'ready', model: m.model, dimensions: m.dimensions, covers: true, configured: false };
  }
  return { state: 'ready', ...configured, covers: false, configured: true };
}

/** What a person is told when search by meaning cannot run, naming what to set or install. */
export function searchModelProblem(m: SearchModel): string | null {
  if (m.state === 'off')
    return 'search by meaning needs embeddings: set EMBEDDINGS_BASE_URL to an OpenAI-compatible embeddings API (and EMBEDDINGS_MODEL)';
  if (m.state === 'no-pgvector')
    return 'search by meaning needs the pgvector extension in Postgres: install it (scripts/install-pgvector.sh, postgresql-15-pgvector, or the pgvector/pgvector image), then run `videosite-ingest migrate`';
  if (m.state === 'not-created')
    return 'search by meaning needs the embeddings table: pgvector is installed but not created in this database (a daemon with EMBEDDINGS_BASE_URL creates it as it starts, as a role that may CREATE EXTENSION vector)';
  return null;
}
