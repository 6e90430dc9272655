/** `sources add | list | remove | pause | resume`: the playlists and channels to keep in sync. */
import { Argument, InvalidArgumentError, type Command } from 'commander';
import { CronExpressionParser } from 'cron-parser';
import { parseChannelRef, parsePlaylistId } from '../api/ids.ts';
import { LIMIT_MAX } from '../api/schemas.ts';
import type { Source } from '../db/schema.ts';
import { deleteSource, insertSource, listSources, setSourcePaused } from '../db/sources.ts';
import { syncSchedulers } from '../pipeline/reconcile.ts';
import { registerSource } from '../pipeline/sources.ts';
import { intArg } from './args.ts';
import { createContext, type Context } from './context.ts';
import { waitForRedis } from './redis-ready.ts';
import { renderTable, shortTime } from './table.ts';

/** `--limit` when not given: the most one batch can hold, so "every video" is the default. */
export const SOURCE_LIMIT_DEFAULT = LIMIT_MAX;

const LANG_RE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/;

function langsArg(value: string): string[] {
  const langs = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (langs.length === 0) throw new InvalidArgumentError('expected language codes such as en or en,de.');
  for (const l of langs) {
    if (!LANG_RE.test(l)) throw new InvalidArgumentError(`"${l}" is not a language code (expected ISO 639-1 such as en, de, pt-BR).`);
  }
  return [...new Set(langs)];
}

function cronArg(value: string): string {
  try {
    CronExpressionParser.parse(value, { tz: 'UTC' });
  } catch (e: unknown) {
    throw new InvalidArgumentError(
      `"${value}" is not a cron expression (${e instanceof Error ? e.message : 'invalid'}); expected five fields such as "0 3 * * *".`,
    );
  }
  return value;
}

const sourceIdArg = intArg(1, 2_147_483_647);

async function withContext<T>(fn: (ctx: Context) => Promise<T>): Promise<T> {
  const ctx = createContext();
  try {
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}

/** Keep the cron schedulers in Redis in step; Redis being down only delays that to the daemon. */
async function refreshSchedulers(ctx: Context): Promise<void> {
  try {
    await waitForRedis(ctx.redis());
    await syncSchedulers({ sql: ctx.db().sql, queues: ctx.queues() });
  } catch (e: unknown) {
    ctx.log.warn({ err: { message: e instanceof Error ? e.message : String(e) } }, 'could not update cron schedules in Redis; the daemon will at its next reconcile');
  }
}

function describe(s: Source): string {
  return `${s.kind} ${s.externalId}${s.title ? ` (${s.title})` : ''}`;
}

export function registerSourcesCommand(program: Command): void {
  const sources = program.command('sources').description('manage the playlists and channels to keep in sync');

  sources
    .command('add')
    .description('register a playlist or channel (resolved through the API: costs 1 credit)')
    .addArgument(new Argument('<kind>', 'what the reference names').choices(['playlist', 'channel']))
    .argument('<id-or-url>', 'playlist ID or URL; channel ID, @handle, or channel URL')
    .option('--limit <n>', `most videos per sync, 1..${LIMIT_MAX}`, intArg(1, LIMIT_MAX), SOURCE_LIMIT_DEFAULT)
    .option('--lang <xx[,yy]>', 'transcript languages (default: the API picks the first available)', langsArg)
    .option('--text', 'store transcripts as plain text instead of timed chunks', false)
    .option('--cron <expr>', 'sync on this schedule (UTC, five fields) when a daemon runs; default: only by backfill', cronArg)
    .action(async (kind: 'playlist' | 'channel', ref: string, o: { limit: number; lang?: string[]; text: boolean; cron?: string }) => {
      // parse locally first: a typo fails here, before any credit is spent (and before any connection)
      if (kind === 'playlist') parsePlaylistId(ref, 'id-or-url');
      else parseChannelRef(ref, 'id-or-url');
      await withContext(async (ctx) => {
        // the API client takes its rate-limit tokens from Redis: fail now rather than hang there
        await waitForRedis(ctx.redis());
        const { sql, db } = ctx.db();
        const s = await registerSource(
          { sql, db, api: ctx.api() },
          { kind, ref, limit: o.limit, langs: o.lang ?? [], textOnly: o.text, cron: o.cron ?? null },
        );
        if (s.cron) await refreshSchedulers(ctx);
        process.stdout.write(
          `source ${s.id} added: ${describe(s)}, limit ${s.maxVideos}, transcripts ${s.langs.length ? s.langs.join(',') : 'default language'}` +
            `${s.textOnly ? ' as text' : ''}, ${s.cron ? `cron "${s.cron}"` : 'no schedule (backfill only)'}\n`,
        );
      });
    });

  sources
    .command('list')
    .description('list registered sources')
    .option('--json', 'print JSON instead of a table', false)
    .action(async (o: { json: boolean }) => {
      await withContext(async (ctx) => {
        const rows = await listSources(ctx.db().db);
        if (o.json) {
          process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
          return;
        }
        if (rows.length === 0) {
          process.stdout.write('no sources (add one: videosite-ingest sources add channel @handle)\n');
          return;
        }
        process.stdout.write(
          renderTable(
            ['id', 'kind', 'external id', 'title', 'limit', 'langs', 'cron', 'paused', 'last synced'],
            rows.map((s) => [
              s.id, s.kind, s.externalId, s.title, s.maxVideos, s.langs.join(',') || 'default',
              s.cron ?? '-', s.paused ? 'yes' : 'no', shortTime(s.lastSyncedAt ? s.lastSyncedAt.toISOString() : null),
            ]),
          ),
        );
      });
    });

  sources
    .command('remove')
    .description('stop syncing a source (its videos, transcripts and batch history stay)')
    .argument('<id>', 'source ID (see sources list)', sourceIdArg)
    .action(async (id: number) => {
      await withContext(async (ctx) => {
        const s = await deleteSource(ctx.db().db, id);
        await refreshSchedulers(ctx);
        process.stdout.write(`source ${s.id} removed: ${describe(s)}\n`);
      });
    });

  for (const [name, paused] of [['pause', true], ['resume', false]] as const) {
    sources
      .command(name)
      .description(paused ? 'stop scheduled syncs of a source (backfill still syncs it)' : 'resume scheduled syncs of a source')
      .argument('<id>', 'source ID (see sources list)', sourceIdArg)
      .action(async (id: number) => {
        await withContext(async (ctx) => {
          const s = await setSourcePaused(ctx.db().db, id, paused);
          await refreshSchedulers(ctx);
          process.stdout.write(`source ${s.id} ${paused ? 'paused' : 'resumed'}: ${describe(s)}\n`);
        });
      });
  }
}
