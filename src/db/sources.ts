/**
 * The `sources` table: registering, listing and changing the playlists and channels to sync.
 */
import { asc, eq, sql as dsql } from 'drizzle-orm';
import type { Db } from './connection.ts';
import { sources, type NewSource, type Source } from './schema.ts';

export class SourceExistsError extends Error {
  readonly existingId: number;
  constructor(kind: string, externalId: string, existingId: number) {
    super(`${kind} ${externalId} is already registered as source ${existingId}`);
    this.name = 'SourceExistsError';
    this.existingId = existingId;
  }
}

export class SourceNotFoundError extends Error {
  readonly sourceId: number;
  constructor(sourceId: number) {
    super(`source ${sourceId} does not exist (see: sources list)`);
    this.name = 'SourceNotFoundError';
    this.sourceId = sourceId;
  }
}

export async function insertSource(db: Db, row: NewSource): Promise<Source> {
  const inserted = await db
    .insert(sources)
    .values(row)
    .onConflictDoNothing({ target: [sources.kind, sources.externalId] })
    .returning();
  if (inserted[0]) return inserted[0];
  const existing = await db
    .select({ id: sources.id })
    .from(sources)
    .where(dsql`${sources.kind} = ${row.kind} and ${sources.externalId} = ${row.externalId}`);
  throw new SourceExistsError(row.kind, row.externalId, existing[0]?.id ?? -1);
}

export async function listSources(db: Db): Promise<Source[]> {
  return db.select().from(sources).orderBy(asc(sources.id));
}

export async function getSource(db: Db, id: number): Promise<Source> {
  const rows = await db.select().from(sources).where(eq(sources.id, id));
  if (!rows[0]) throw new SourceNotFoundError(id);
  return rows[0];
}

export async function deleteSource(db: Db, id: number): Promise<Source> {
  const rows = await db.delete(sources).where(eq(sources.id, id)).returning();
  if (!rows[0]) throw new SourceNotFoundError(id);
  return rows[0];
}

export async function setSourcePaused(db: Db, id: number, paused: boolean): Promise<Source> {
  const rows = await db
    .update(sources)
    .set({ paused, updatedAt: new Date() })
    .where(eq(sources.id, id))
    .returning();
  if (!rows[0]) throw new SourceNotFoundError(id);
  return rows[0];
}
