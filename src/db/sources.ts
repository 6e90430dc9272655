/**
 * The `sources` table: registering, listing and changing the sources to sync (drizzle, for the
 * `sources` command), and what the pipeline reads and records about them (raw, any Queryable).
 */
import { asc, eq, sql as dsql } from 'drizzle-orm';
import type { Db, Queryable } from './connection.ts';
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

/** A source's `--max-credits-per-day` (null: no cap). */
export async function setSourceMaxCreditsPerDay(db: Db, id: number, maxCreditsPerDay: number | null): Promise<Source> {
  const rows = await db
    .update(sources)
    .set({ maxCreditsPerDay, updatedAt: new Date() })
    .where(eq(sources.id, id))
    .returning();
  if (!rows[0]) throw new SourceNotFoundError(id);
  return rows[0];
}

/** Every source's ID, in order. */
export async function allSourceIds(sql: Queryable): Promise<number[]> {
  const rows = await sql<Pick<Source, 'id'>[]>`select id from sources order by id`;
  return rows.map((r) => r.id);
}

/** Which of `ids` are registered. */
export async function existingSourceIds(sql: Queryable, ids: readonly number[]): Promise<Set<number>> {
  const rows = await sql<Pick<Source, 'id'>[]>`select id from sources where id = any(${[...ids]}::int[])`;
  return new Set(rows.map((r) => r.id));
}

/** The cron patterns that need a job scheduler: each one some source not paused runs on. */
export async function activeCrons(sql: Queryable): Promise<string[]> {
  const rows = await sql<{ cron: string }[]>`select distinct cron from sources where cron is not null and not paused order by cron`;
  return rows.map((r) => r.cron);
}

/** The sources a tick of `cron` syncs: those on exactly that pattern and not paused, in ID order. */
export async function sourceIdsOnCron(sql: Queryable, cron: string): Promise<number[]> {
  const rows = await sql<Pick<Source, 'id'>[]>`select id from sources where cron = ${cron} and not paused order by id`;
  return rows.map((r) => r.id);
}

