/**
 * Registering a source: the reference is parsed locally (a typo fails before any credit is
 * spent), then resolved through the API to its canonical ID (a handle becomes the channel ID),
 * and the channel or playlist record is kept.
 */
import { ApiError } from '../api/errors.ts';
import { parseChannelRef, parsePlaylistId } from '../api/ids.ts';
import type { Source, SourceKind } from '../db/schema.ts';
import { insertSource } from '../db/sources.ts';
import type { PipelineDeps } from './deps.ts';
import { upsertChannel, upsertPlaylist } from './scheduler.ts';

export interface NewSourceInput {
  kind: SourceKind;
  ref: string;
  limit: number;
  langs: string[];
  textOnly: boolean;
  cron: string | null;
}

export class SourceNotFoundUpstreamError extends Error {
  constructor(kind: SourceKind, ref: string) {
    super(`${kind} ${JSON.stringify(ref)} was not found upstream`);
    this.name = 'SourceNotFoundUpstreamError';
  }
}

export async function registerSource(deps: Pick<PipelineDeps, 'sql' | 'db' | 'api'>, input: NewSourceInput): Promise<Source> {
  const { sql, db, api } = deps;
  const canonical =
    input.kind === 'playlist' ? parsePlaylistId(input.ref, 'id-or-url') : parseChannelRef(input.ref, 'id-or-url').canonical;
  let externalId: string;
  let title: string;
  try {
    if (input.kind === 'channel') {
      const c = await api.getChannel({ id: canonical });
      await upsertChannel(sql, c);
      externalId = c.id;
      title = c.name;
    } else {
      const p = await api.getPlaylist({ id: canonical });
      await upsertPlaylist(sql, p);
      externalId = p.id;
      title = p.title;
    }
  } catch (e: unknown) {
    if (e instanceof ApiError && e.code === 'not-found') throw new SourceNotFoundUpstreamError(input.kind, input.ref);
    throw e;
  }
  return insertSource(db, {
    kind: input.kind,
    ref: input.ref,
    externalId,
    title,
    maxVideos: input.limit,
    langs: input.langs,
    textOnly: input.textOnly,
    cron: input.cron,
  });
}
