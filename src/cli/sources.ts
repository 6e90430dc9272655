/**
 * `sources add | list | edit | remove | pause | resume`: the channels, playlists, video lists and
 * searches to keep in sync. What a command needs beyond parsing its arguments (the database,
 * Redis, the pipeline) is imported when it runs, so `sources --help` loads none of it.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { Argument, Command, InvalidArgumentError, Option } from 'commander';
import { LIMIT_MAX } from '../api/schemas.ts';
import type { Source } from '../db/schema.ts';
import type { SourceMatch, SourceSettings } from '../db/sources.ts';
import { REFRESH_MIN_MS } from '../domain/attempts.ts';
import { MEDIA_MODE_DEFAULT, MEDIA_MODES, modeGenerates, type MediaMode } from '../domain/media.ts';
import { isPageSourceKind, WEBSITE_LIMIT_DEFAULT, WEBSITE_LIMIT_MAX } from '../domain/pages.ts';
import { checkCronSyntax, checkSourceCron, CronError, type CronPlan } from '../domain/cron.ts';
import {
  SEARCH_FEATURE_ALIASES,
  SEARCH_FILTER_VALUES,
  SEARCH_LIMIT_DEFAULT,
  SEARCH_SOURCE_TYPE,
  SOURCE_INCLUDES,
  SOURCE_KINDS,
  type SearchFilter,
  type SearchFilterValues,
  type SourceInclude,
  type SourceKind,
} from '../domain/sources.ts';
import type { SourceRef } from '../pipeline/kinds/adapter.ts';
import { LISTING_LIMIT_DEFAULT } from '../pipeline/kinds/listing.ts';
import type { NewSourceInput } from '../pipeline/commands/sources.ts';
import { durationArg, formatDurationMs, intArg } from './args.ts';
import type { Context } from './context.ts';
import { renderTable, shortTime } from './table.ts';
import { quoteValue, terminalJson, terminalSafe } from '../terminal-text.ts';
import { shellCommand } from '../shell-quote.ts';
import { LANG_CODE_RE } from '../domain/langs.ts';

function langsArg(value: string): string[] {
  const langs = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (langs.length === 0) throw new InvalidArgumentError('expected language codes such as en or en,de.');
  for (const l of langs) {
    if (!LANG_CODE_RE.test(l))
      throw new InvalidArgumentError(`"${l}" is not a language code (expected ISO 639-1 such as en, de, pt-BR).`);
  }
  return [...new Set(langs)];
}

function cronArg(value: string): string {
  try {
    checkCronSyntax(value);
  } catch (e: unknown) {
    if (e instanceof CronError) throw new InvalidArgumentError(`"${value}" ${e.message}.`);
    throw e;
  }
  return value;
}

/** A bad argument found after parsing: exit 2 (src/cli/exit.ts, imported only when it is needed). */
async function usageError(message: string): Promise<Error> {
  const { UsageError } = await import('./exit.ts');
  return new UsageError(message);
}

/**
 * How often the cron may fire (SOURCE_MIN_INTERVAL_MS, from the configuration), and the next
 * fire times to print: refused as a usage error naming --cron.
 */
async function plannedCron(cron: string, minIntervalMs: number): Promise<CronPlan> {
  try {
    return checkSourceCron(cron, minIntervalMs, new Date());
  } catch (e: unknown) {
    if (e instanceof CronError) throw await usageError(`--cron "${cron}" ${e.message}`);
    throw e;
  }
}

function formatFires(plan: CronPlan): string {
  return `  next syncs (UTC): ${plan.next.map((d) => d.toISOString().replace('T', ' ').slice(0, 16)).join(', ')}\n`;
}

async function withContext<T>(fn: (ctx: Context) => Promise<T>): Promise<T> {
  const { createContext } = await import('./context.ts');
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
    const [{ waitForRedis }, { syncSchedulers }] = await Promise.all([
      import('./redis-ready.ts'),
      import('../pipeline/services/reconcile.ts'),
    ]);
    await waitForRedis(ctx.redis());
    await syncSchedulers({ sql: ctx.db().sql, queues: ctx.queues() });
  } catch (e: unknown) {
    ctx.log.warn(
      { event: 'schedules.update_failed', err: { message: e instanceof Error ? e.message : String(e) } },
      'could not update cron schedules in Redis; the daemon will at its next reconcile',
    );
  }
}

/** A source in one line; its title and external ID may come from the upstream. */
function describe(s: Source): string {
  return terminalSafe(`${s.kind} ${s.externalId}${s.title ? ` (${s.title})` : ''}`);
}

/**
 * `sources list`'s transcripts column: what a sync buys for its items. A media source: its
 * `--mode`, with its minutes budget when it generates; a source of videos: native, or native
 * else generated (`--generate-missing`) within its budget; a web source: none.
 */
function transcriptsBought(s: Source): string {
  const budget = s.maxGenerateMinutes === null ? '' : ` (max ${s.maxGenerateMinutes} min)`;
  if (s.kind === 'media') {
    const mode = s.mediaMode ?? MEDIA_MODE_DEFAULT;
    return modeGenerates(mode) ? `${mode}${budget}` : mode;
  }
  if (isPageSourceKind(s.kind)) return '-';
  return s.generateMissing ? `native, else generated${budget}` : 'native';
}

function includeArg(value: string): SourceInclude[] {
  const parts = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  for (const p of parts) {
    if (!(SOURCE_INCLUDES as readonly string[]).includes(p)) {
      throw new InvalidArgumentError(
        `"${p}" is not one of ${SOURCE_INCLUDES.join(', ')} (e.g. --include shorts,live).`,
      );
    }
  }
  if (parts.length === 0)
    throw new InvalidArgumentError(`expected ${SOURCE_INCLUDES.join(', ')} or both, comma-separated.`);
  return [...new Set(parts)] as SourceInclude[];
}

/** `--features hd,4k` and `--features hd --features 4k` alike: every value given, in order (checked when the source is parsed). */
function featuresArg(value: string, previous: string[] | undefined): string[] {
  return [
    ...(previous ?? []),
    ...value
      .split(',')
      .map((f) => f.trim())
      .filter((f) => f !== ''),
  ];
}

/** What `--help` says each search filter takes. */
function searchFilterHelp(f: SearchFilter): string {
  if (f === 'type') return `search filter: ${SEARCH_SOURCE_TYPE} (a search source keeps videos)`;
  if (f === 'features') {
    return `search filter, one or more (comma-separated or repeated): ${SEARCH_FILTER_VALUES.features.join(' | ')} (${Object.keys(SEARCH_FEATURE_ALIASES).join(', ')} taken too)`;
  }
  return `search filter: ${SEARCH_FILTER_VALUES[f].join(' | ')}`;
}

/** Option flag of each search filter (`sortBy` is `--sort-by`). */
const SEARCH_FILTER_FLAGS: Record<SearchFilter, string> = {
  uploadDate: '--upload-date',
  type: '--type',
  duration: '--duration',
  sortBy: '--sort-by',
  features: '--features',
};

/** What `sources add <kind>` takes, per kind: the reference argument and the kind's own options. */
interface KindCli {
  describe: string;
  argument: string;
  argumentHelp: string;
  /** the options only this kind takes */
  options(cmd: Command): void;
  /** how much the registered source holds, for the confirmation line */
  size(s: Source): string;
}

const listingOptions = (cmd: Command): void => {
  cmd.option(
    '--limit <n>',
    `most videos per listing, 1..${LIMIT_MAX} (default ${LISTING_LIMIT_DEFAULT})`,
    intArg(1, LIMIT_MAX),
  );
  cmd.option(
    '--include <shorts,live>',
    'also submit the listed shorts and/or live videos (a channel or playlist batch skips them)',
    includeArg,
  );
};

const KIND_CLI: Record<SourceKind, KindCli> = {
  channel: {
    describe:
      'a channel: its newest videos (at most 5000 per listing), listed at every sync (1 credit), plus --include shorts,live',
    argument: '<id-or-url>',
    argumentHelp: 'channel ID, @handle, or channel URL',
    options: listingOptions,
    size: (s) => `limit ${s.maxVideos}`,
  },
  playlist: {
    describe: 'a playlist: listed at every sync (1 credit; at most its 5000 newest), plus --include shorts,live',
    argument: '<id-or-url>',
    argumentHelp: 'playlist ID or URL',
    options: listingOptions,
    size: (s) => `limit ${s.maxVideos}`,
  },
  videos: {
    describe: 'any number of videos by ID or URL (arguments, or --file with one per line); no listing cost',
    argument: '[id-or-url...]',
    argumentHelp: 'video IDs or URLs (or use --file)',
    options: (cmd) => {
      cmd.option('--file <path>', 'read video IDs or URLs from a file, one per line (`-`: standard input)');
    },
    size: (s) => `${s.maxVideos} videos`,
  },
  search: {
    describe:
      'a saved search: each sync pages the search (1 credit a page) up to --limit videos and submits the new ones',
    argument: '<query>',
    argumentHelp: 'the search query, quoted',
    options: (cmd) => {
      cmd.option(
        '--limit <n>',
        `most video results kept per sync, 1..${LIMIT_MAX} (default ${SEARCH_LIMIT_DEFAULT})`,
        intArg(1, LIMIT_MAX),
      );
      for (const f of Object.keys(SEARCH_FILTER_FLAGS) as SearchFilter[]) {
        if (f === 'features') cmd.option(`${SEARCH_FILTER_FLAGS[f]} <list>`, searchFilterHelp(f), featuresArg);
        else cmd.option(`${SEARCH_FILTER_FLAGS[f]} <value>`, searchFilterHelp(f));
      }
    },
    size: (s) => `limit ${s.maxVideos}`,
  },
  website: {
    describe:
      'a website: each sync crawls it from the URL, staying under its path (1 credit + 1 per page, at most --limit pages)',
    argument: '<url>',
    argumentHelp: 'the URL to crawl from, e.g. https://example.com/docs',
    options: (cmd) => {
      cmd.option(
        '--limit <n>',
        `most pages per crawl, 1..${WEBSITE_LIMIT_MAX} (default ${WEBSITE_LIMIT_DEFAULT}); a crawl is estimated at 1 + this`,
        intArg(1, WEBSITE_LIMIT_MAX),
      );
    },
    size: (s) => `at most ${s.maxVideos} pages a crawl`,
  },
  pages: {
    describe: 'web pages by URL (arguments, or --file with one per line), each read at every sync (1 credit a page)',
    argument: '[url...]',
    argumentHelp: 'page URLs (or use --file)',
    options: (cmd) => {
      cmd.option('--file <path>', 'read page URLs from a file, one per line (`-`: standard input)');
    },
    size: (s) => `${s.maxVideos} pages`,
  },
  media: {
    describe:
      'media by URL (arguments, or --file with one per line): the video platform, TikTok, Instagram, X/Twitter, Facebook or a media file; ' +
      'each item: its metadata (1 credit), then for a video its transcript in --mode (native: 1 credit; auto, generate: 2 credits per started minute)',
    argument: '[url...]',
    argumentHelp: 'media URLs (or use --file)',
    options: (cmd) => {
      cmd.option('--file <path>', 'read media URLs from a file, one per line (`-`: standard input)');
      cmd.addOption(
        new Option(
          '--mode <mode>',
          'the transcript to buy: native (captions only), auto (captions, else generated) or generate (always generated); auto and generate need --max-generate-minutes',
        )
          .choices(MEDIA_MODES)
          .default(MEDIA_MODE_DEFAULT),
      );
    },
    size: (s) => `${s.maxVideos} media, transcripts ${s.mediaMode ?? MEDIA_MODE_DEFAULT}`,
  },
};

/** One reference per non-empty line (`#` starts a comment), each named by its line for errors. */
async function refsFromFile(path: string): Promise<{ refs: SourceRef[]; origin: string }> {
  const text =
    path === '-'
      ? await readStdin()
      : await readFile(path, 'utf8').catch((e: unknown) => {
          throw new InvalidArgumentError(
            `--file ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`,
          );
        });
  const origin = path === '-' ? 'stdin' : basename(path);
  const refs: SourceRef[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const value = line.replace(/#.*$/, '').trim();
    if (value !== '') refs.push({ value, where: `${origin} line ${i + 1}` });
  });
  return { refs, origin };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

interface AddOptions {
  limit?: number;
  lang?: string[];
  text: boolean;
  cron?: string;
  include?: SourceInclude[];
  file?: string;
  generateMissing: boolean;
  maxGenerateMinutes?: number;
  mode?: MediaMode;
  maxCreditsPerDay?: number;
  refresh?: number;
  translate?: string[];
  maxTranslateMinutes?: number;
  uploadDate?: string;
  type?: string;
  duration?: string;
  sortBy?: string;
  features?: string[];
}

function addKindCommand(add: Command, kind: SourceKind): void {
  const cli = KIND_CLI[kind];
  const cmd = add.command(kind).description(cli.describe).argument(cli.argument, cli.argumentHelp);
  cli.options(cmd);
  cmd
    .option('--lang <xx[,yy]>', 'transcript languages (default: the API picks the first available)', langsArg)
    .option('--text', 'store transcripts as plain text instead of timed chunks', false)
    .option(
      '--cron <expr>',
      'sync on this schedule when a daemon runs: five fields, UTC, at most every SOURCE_MIN_INTERVAL_MS (5 min); default: only by backfill',
      cronArg,
    )
    .option(
      '--generate-missing',
      'generate a transcript from the audio for videos without captions (2 credits per started minute)',
      false,
    )
    .option(
      '--max-generate-minutes <n>',
      'the most media minutes this source may have generated, ever (needs --generate-missing, or --mode auto|generate of a media source)',
      intArg(1, 10_000_000),
    )
    .option(
      '--max-credits-per-day <n>',
      'the most credits this source may spend in one UTC day (listings, batches, generated transcripts); a sync past it is refused; default: no cap',
      intArg(1, 2_147_483_647),
    )
    .option('--refresh <duration>', REFRESH_HELP, REFRESH_ARG)
    .option('--translate <xx[,yy]>', TRANSLATE_HELP, langsArg)
    .option('--max-translate-minutes <n>', MAX_TRANSLATE_MINUTES_HELP, intArg(1, 10_000_000))
    .action(async (refArg: string | string[] | undefined, o: AddOptions) => {
      await checkTranslateFlags(kind, o.translate, o.maxTranslateMinutes);
      const given = Array.isArray(refArg) ? refArg : refArg === undefined ? [] : [refArg];
      const refs: SourceRef[] = given.map((value, i) => ({
        value,
        where: given.length === 1 ? cli.argument.replace(/[<>[\]. ]/g, '') : `argument ${i + 1}`,
      }));
      let origin: string | undefined;
      if (o.file !== undefined) {
        const fromFile = await refsFromFile(o.file);
        // a loop, not push(...refs): spreading a long list overflows the call stack
        for (const r of fromFile.refs) refs.push(r);
        origin = fromFile.origin;
      }
      const filters: SearchFilterValues = {};
      for (const f of Object.keys(SEARCH_FILTER_FLAGS) as SearchFilter[]) {
        if (f === 'features') {
          if (o.features !== undefined) filters.features = o.features;
        } else if (o[f] !== undefined) filters[f] = o[f];
      }
      const input: NewSourceInput = {
        kind,
        refs,
        limit: o.limit,
        langs: o.lang ?? [],
        textOnly: o.text,
        cron: o.cron ?? null,
        include: o.include ?? [],
        filters,
        generateMissing: o.generateMissing,
        maxGenerateMinutes: o.maxGenerateMinutes ?? null,
        ...(o.mode !== undefined ? { mediaMode: o.mode } : {}),
        ...(origin !== undefined ? { origin } : {}),
      };
      const [{ parseSource, registerSource }, { deleteSource, updateSourceSettings, getSource }, { waitForRedis }] =
        await Promise.all([
          import('../pipeline/commands/sources.ts'),
          import('../db/sources.ts'),
          import('./redis-ready.ts'),
        ]);
      // parse locally first: a typo fails here, before any credit is spent (and before any connection)
      parseSource(input);
      await withContext(async (ctx) => {
        const plan =
          input.cron === null ? undefined : await plannedCron(input.cron, ctx.config.pipeline.sourceMinIntervalMs);
        // the API client takes its rate-limit tokens from Redis: fail now rather than hang there
        await waitForRedis(ctx.redis());
        const { sql } = ctx.db();
        let s = await registerSource({ sql, api: ctx.api(), log: ctx.log }, input);
        if (o.maxCreditsPerDay !== undefined || o.refresh !== undefined || o.translate !== undefined) {
          // set before the schedulers know the source, so no sync of it runs without its cap
          const id = s.id;
          s = await updateSourceSettings(sql, id, {
            maxCreditsPerDay: o.maxCreditsPerDay,
            refreshAfterMs: o.refresh,
            translateLangs: o.translate,
            maxTranslateMinutes: o.maxTranslateMinutes,
          })
            .then(() => getSource(sql, id))
            .catch(async (e: unknown) => {
              await deleteSource(sql, id);
              throw e;
            });
        }
        if (s.cron) await refreshSchedulers(ctx);
        const extras = [
          s.include.length > 0 ? `including ${s.include.join(',')}` : '',
          s.generateMissing && s.kind !== 'media'
            ? `generating missing transcripts${s.maxGenerateMinutes !== null ? ` (at most ${s.maxGenerateMinutes} min)` : ''}`
            : '',
          s.translateLangs.length > 0
            ? `translating into ${s.translateLangs.join(',')} (at most ${s.maxTranslateMinutes} min)`
            : '',
          s.kind === 'media' && s.maxGenerateMinutes !== null
            ? `at most ${s.maxGenerateMinutes} generated minutes`
            : '',
          s.maxCreditsPerDay !== null ? `at most ${s.maxCreditsPerDay} credits a day` : '',
          s.refreshAfterMs !== null ? `refreshed every ${formatDurationMs(s.refreshAfterMs)}` : '',
        ].filter((x) => x !== '');
        process.stdout.write(
          `source ${s.id} added: ${describe(s)}, ${KIND_CLI[s.kind].size(s)}, ` +
            (isPageSourceKind(s.kind)
              ? 'pages as Markdown'
              : s.kind === 'media'
                ? 'metadata of every item'
                : `transcripts ${s.langs.length ? s.langs.join(',') : 'in the first language each video has (--lang xx to choose)'}` +
                  `${s.textOnly ? ' as text' : ''}`) +
            `${extras.length ? `, ${extras.join(', ')}` : ''}, ` +
            `${s.cron ? `cron "${s.cron}"` : 'no schedule (backfill only)'}\n`,
        );
        if (plan) process.stdout.write(formatFires(plan));
      });
    });
}

export function registerSourcesCommand(program: Command): void {
  const sources = program
    .command('sources')
    .description(
      'manage the sources to keep in sync: channels, playlists, videos, searches, websites, pages and media',
    );

  const add = sources
    .command('add')
    .description(
      'register a source: a channel, a playlist, a list of videos, a saved search, a website, web pages or media of any platform',
    )
    // each kind is a subcommand; these say what is wrong when none matches (a missing or unknown kind)
    .addArgument(new Argument('<kind>', 'what the reference names').choices(SOURCE_KINDS))
    .argument('[reference...]', "the kind's reference (see: sources add <kind> --help)")
    .action(() => {
      // unreachable: a valid kind runs its own subcommand
    });
  for (const kind of SOURCE_KINDS) addKindCommand(add, kind);

  sources
    .command('list')
    .description('list registered sources')
    .option('--json', 'print JSON instead of a table', false)
    .action(async (o: { json: boolean }) => {
      const { listSources } = await import('../db/sources.ts');
      await withContext(async (ctx) => {
        const rows = await listSources(ctx.db().sql);
        if (o.json) {
          process.stdout.write(`${terminalJson(rows, 2)}\n`);
          return;
        }
        if (rows.length === 0) {
          process.stdout.write('no sources (add one: videosite-ingest sources add channel @handle)\n');
          return;
        }
        process.stdout.write(
          renderTable(
            [
              'id',
              'kind',
              'external id',
              'title',
              'limit',
              'langs',
              'transcripts',
              'translate',
              'credits/day',
              'refresh',
              'cron',
              'paused',
              'last synced',
            ],
            rows.map((s) => [
              s.id,
              s.kind,
              s.externalId,
              s.title,
              s.maxVideos,
              s.langs.join(',') || 'default',
              transcriptsBought(s),
              s.translateLangs.length > 0 ? `${s.translateLangs.join(',')} (max ${s.maxTranslateMinutes} min)` : 'none',
              s.maxCreditsPerDay ?? 'no cap',
              s.refreshAfterMs === null ? 'never' : formatDurationMs(s.refreshAfterMs),
              s.cron ?? '-',
              s.paused ? 'yes' : 'no',
              shortTime(s.lastSyncedAt ? s.lastSyncedAt.toISOString() : null),
            ]),
          ),
        );
      });
    });

  registerEditCommand(sources);

  sources
    .command('remove')
    .description('stop syncing a source (its videos, transcripts and batch history stay)')
    .argument('<id|ref>', SOURCE_REF_HELP)
    .action(async (ref: string) => {
      const { deleteSource } = await import('../db/sources.ts');
      await withContext(async (ctx) => {
        const s = await deleteSource(ctx.db().sql, (await sourceNamed(ctx, ref)).id);
        await refreshSchedulers(ctx);
        process.stdout.write(`source ${s.id} removed: ${describe(s)}\n`);
      });
    });

  for (const [name, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    sources
      .command(name)
      .description(
        paused ? 'stop scheduled syncs of a source (backfill still syncs it)' : 'resume scheduled syncs of a source',
      )
      .argument('<id|ref>', SOURCE_REF_HELP)
      .action(async (ref: string) => {
        const { setSourcePaused } = await import('../db/sources.ts');
        await withContext(async (ctx) => {
          const s = await setSourcePaused(ctx.db().sql, (await sourceNamed(ctx, ref)).id, paused);
          await refreshSchedulers(ctx);
          process.stdout.write(`source ${s.id} ${paused ? 'paused' : 'resumed'}: ${describe(s)}\n`);
        });
      });
  }
}

const REFRESH_HELP =
  'fetch each stored video (metadata and transcripts) again once its latest fetch is this old (e.g. 7d, 30d; at least 1h), ' +
  'so that edits, videos gone and back become changes and events; each refresh costs what the first fetch did; default: never';
const REFRESH_ARG = durationArg(REFRESH_MIN_MS, '1h');

const TRANSLATE_HELP =
  "translate each stored transcript of another language into these languages (30 credits per started minute of the video's " +
  'duration, bought once per video and language whichever sources ask; never instead of a native transcript); needs --max-translate-minutes';
const MAX_TRANSLATE_MINUTES_HELP =
  'the most transcript minutes this source may have translated, ever (required with --translate); a translation past it is recorded as refused, nothing spent';

/**
 * `--translate` buys the most expensive call there is: never without a minute budget, and only
 * for a source that has transcripts. A usage error (exit 2) naming the flag, before anything runs.
 */
async function checkTranslateFlags(
  kind: SourceKind,
  translate: readonly string[] | undefined,
  maxMinutes: number | undefined,
): Promise<void> {
  if (translate !== undefined && isPageSourceKind(kind)) {
    throw await usageError(`--translate does not apply to a ${kind} source: it keeps web pages, not transcripts`);
  }
  if (translate !== undefined && maxMinutes === undefined) {
    throw await usageError(
      '--translate needs --max-translate-minutes N: the most transcript minutes this source may have translated (30 credits a minute)',
    );
  }
  if (translate === undefined && maxMinutes !== undefined) {
    throw await usageError('--max-translate-minutes needs --translate xx[,yy]');
  }
}

const SOURCE_REF_HELP =
  "the source: its ID, the reference it was added with, its external ID, a channel's @handle, or a channel or playlist URL (see sources list)";

/**
 * The one source `ref` names (src/pipeline/commands/source-ref.ts), or a usage error: none names the
 * reference and points at `sources list`; several are listed, for the person to pick one's ID.
 */
async function sourceNamed(ctx: Context, ref: string): Promise<SourceMatch> {
  const { findSourcesByRef } = await import('../pipeline/commands/source-ref.ts');
  const found = await findSourcesByRef(ctx.db().sql, ref);
  if (found.length === 1) return found[0]!;
  if (found.length === 0) {
    throw await usageError(
      /^\d+$/.test(ref.trim())
        ? `source ${ref.trim()} does not exist (see: sources list)`
        : `no source is ${quoteValue(ref)}: give its ID, the reference it was added with, its external ID or a channel's @handle (see: sources list)`,
    );
  }
  const candidates = renderTable(
    ['id', 'kind', 'external id', 'title'],
    found.map((s) => [s.id, s.kind, s.externalId, s.title]),
  );
  throw await usageError(
    `${quoteValue(ref)} names ${found.length} sources; give the ID of the one you mean:\n${candidates.trimEnd().replace(/^/gm, '  ')}`,
  );
}

/** How `sources edit` prints each setting, in the order it lists changes. */
const SETTINGS_SHOWN: { [K in keyof SourceSettings]: { label: string; show(v: SourceSettings[K]): string } } = {
  cron: { label: 'cron', show: (v) => (v === null ? 'none' : JSON.stringify(v)) },
  maxVideos: { label: 'limit', show: (v) => String(v) },
  langs: { label: 'langs', show: (v) => (v.length > 0 ? v.join(',') : 'default') },
  textOnly: { label: 'transcripts', show: (v) => (v ? 'text' : 'chunks') },
  include: { label: 'include', show: (v) => (v.length > 0 ? v.join(',') : 'none') },
  maxCreditsPerDay: { label: 'credits/day', show: (v) => (v === null ? 'no cap' : String(v)) },
  refreshAfterMs: { label: 'refresh', show: (v) => (v === null ? 'never' : formatDurationMs(v)) },
  translateLangs: { label: 'translate', show: (v) => (v.length > 0 ? v.join(',') : 'none') },
  maxTranslateMinutes: { label: 'max translate minutes', show: (v) => (v === null ? 'none' : String(v)) },
  mediaMode: { label: 'mode', show: (v) => v ?? MEDIA_MODE_DEFAULT },
  maxGenerateMinutes: { label: 'max generate minutes', show: (v) => (v === null ? 'none' : String(v)) },
};

const SETTING_KEYS = Object.keys(SETTINGS_SHOWN) as (keyof SourceSettings)[];

function changedSettings(before: SourceSettings, after: Partial<SourceSettings>): (keyof SourceSettings)[] {
  return SETTING_KEYS.filter((k) => after[k] !== undefined && JSON.stringify(after[k]) !== JSON.stringify(before[k]));
}

function showChange<K extends keyof SourceSettings>(k: K, before: SourceSettings, after: SourceSettings): string {
  const { label, show } = SETTINGS_SHOWN[k];
  return `${label} ${show(before[k])} -> ${show(after[k])}`;
}

/**
 * The options of `sources add <kind>` that only some kinds take (KIND_CLI), read from the
 * definition itself, so `sources edit` takes an option for exactly the kinds `add` does.
 */
function kindTakes(kind: SourceKind, flag: string): boolean {
  const probe = new Command();
  KIND_CLI[kind].options(probe);
  return probe.options.some((o) => o.long === flag);
}

interface EditOptions {
  cron?: string | false;
  limit?: number;
  lang?: string[];
  text?: boolean;
  chunks?: boolean;
  include?: SourceInclude[] | false;
  maxCreditsPerDay?: number | false;
  refresh?: number | false;
  translate?: string[] | false;
  maxTranslateMinutes?: number;
  mode?: MediaMode;
  maxGenerateMinutes?: number;
}

/** What the next sync buys because of the edit, beyond new videos: said before it is spent. */
function costNotes(id: number, before: SourceSettings, after: SourceSettings): string {
  const notes: string[] = [];
  const added = after.langs.filter((l) => !before.langs.includes(l));
  if (added.length > 0) {
    // transcripts asked for in the default language are kept under no language (video_sync lang '')
    const apart = before.langs.length === 0 ? '; those bought in the default language count as another language' : '';
    notes.push(
      `buys ${added.join(',')} transcripts of this source's videos that have none in ${added.length === 1 ? 'that language' : 'those languages'}${apart}`,
    );
  }
  if (before.textOnly && !after.textOnly)
    notes.push('buys once more, as timed chunks, the transcripts of its videos stored as plain text only');
  if (
    after.refreshAfterMs !== null &&
    (before.refreshAfterMs === null || after.refreshAfterMs < before.refreshAfterMs)
  ) {
    notes.push(
      `buys again (metadata and transcripts) each of its videos last fetched more than ${formatDurationMs(after.refreshAfterMs)} ago, and each one again every ${formatDurationMs(after.refreshAfterMs)}`,
    );
  }
  const translated = after.translateLangs.filter((l) => !before.translateLangs.includes(l));
  if (translated.length > 0) {
    notes.push(
      `buys translations into ${translated.join(',')} of its stored transcripts in other languages (30 credits per started minute of each video), ` +
        `within --max-translate-minutes ${after.maxTranslateMinutes}`,
    );
  }
  const mode = after.mediaMode ?? MEDIA_MODE_DEFAULT;
  if (modeGenerates(mode) && mode !== (before.mediaMode ?? MEDIA_MODE_DEFAULT)) {
    notes.push(
      `buys the media transcripts still due in --mode ${mode} (generated: 2 credits per started minute), ` +
        `within --max-generate-minutes ${after.maxGenerateMinutes}; those stored stay`,
    );
  }
  if (notes.length === 0) return '';
  return `${notes.map((n) => `  next sync ${n}\n`).join('')}  the credits first: ${shellCommand('videosite-ingest', 'backfill', '--source', id, '--dry-run')}\n`;
}

function registerEditCommand(sources: Command): void {
  sources
    .command('edit')
    .description(
      'change a source in place: same ID, its videos, transcripts, batches and sync runs kept; the changes apply from its next sync, ' +
        'which buys only what they make due (an added language: that language; a higher limit: the new videos); a sync already running ' +
        'finishes with the settings it started with',
    )
    .argument('<id|ref>', SOURCE_REF_HELP)
    .option(
      '--cron <expr>',
      'sync on this schedule when a daemon runs: five fields, UTC, at most every SOURCE_MIN_INTERVAL_MS (5 min)',
      cronArg,
    )
    .option('--no-cron', 'no schedule: synced only by backfill')
    .option(
      '--limit <n>',
      `channel, playlist: most videos per listing; search: most results kept per sync; 1..${LIMIT_MAX}`,
      intArg(1, LIMIT_MAX),
    )
    .option(
      '--lang <xx[,yy]>',
      'transcript languages, replacing the list: an added one is bought at the next sync, a dropped one no longer (its transcripts stay)',
      langsArg,
    )
    .addOption(
      new Option('--text', 'buy transcripts as plain text from now on (those stored keep their form)').conflicts(
        'chunks',
      ),
    )
    .option(
      '--chunks',
      'buy transcripts as timed chunks from now on (the next sync buys those stored as text only once more)',
    )
    .option(
      '--include <shorts,live>',
      'channel, playlist: also submit the listed shorts and/or live videos (replaces the list)',
      includeArg,
    )
    .option('--no-include', 'channel, playlist: submit no listed shorts or live videos')
    .option(
      '--max-credits-per-day <n>',
      'the most credits this source may spend in one UTC day',
      intArg(1, 2_147_483_647),
    )
    .option('--no-max-credits-per-day', 'no daily credit cap for this source')
    .option('--refresh <duration>', REFRESH_HELP, REFRESH_ARG)
    .option('--no-refresh', 'stored videos are not fetched again (backfill --refresh still does, once)')
    .option('--translate <xx[,yy]>', `${TRANSLATE_HELP} (replaces the list; translations stored stay)`, langsArg)
    .option('--no-translate', 'buy no more translations (those stored stay)')
    .option('--max-translate-minutes <n>', MAX_TRANSLATE_MINUTES_HELP, intArg(1, 10_000_000))
    .addOption(
      new Option(
        '--mode <mode>',
        "media: the transcript to buy from now on: native, auto or generate (auto and generate need a --max-generate-minutes budget, given now or the source's own); transcripts stored stay",
      ).choices(MEDIA_MODES),
    )
    .option(
      '--max-generate-minutes <n>',
      'media in --mode auto|generate, or a source with --generate-missing: the most minutes it may have generated, ever',
      intArg(1, 2_147_483_647),
    )
    .action(async (ref: string, o: EditOptions) => {
      const set: Partial<SourceSettings> = {};
      if (o.cron !== undefined) set.cron = o.cron === false ? null : o.cron;
      if (o.limit !== undefined) set.maxVideos = o.limit;
      if (o.lang !== undefined) set.langs = o.lang;
      if (o.text === true || o.chunks === true) set.textOnly = o.text === true;
      if (o.include !== undefined) set.include = o.include === false ? [] : o.include;
      if (o.maxCreditsPerDay !== undefined)
        set.maxCreditsPerDay = o.maxCreditsPerDay === false ? null : o.maxCreditsPerDay;
      if (o.refresh !== undefined) set.refreshAfterMs = o.refresh === false ? null : o.refresh;
      if (o.translate !== undefined) set.translateLangs = o.translate === false ? [] : o.translate;
      if (o.maxTranslateMinutes !== undefined) set.maxTranslateMinutes = o.maxTranslateMinutes;
      if (o.mode !== undefined) set.mediaMode = o.mode;
      if (o.maxGenerateMinutes !== undefined) set.maxGenerateMinutes = o.maxGenerateMinutes;
      if (Object.keys(set).length === 0) {
        throw await usageError(
          'nothing to change: give one or more of --cron, --no-cron, --limit, --lang, --text, --chunks, --include, --no-include, ' +
            '--max-credits-per-day, --no-max-credits-per-day, --refresh, --no-refresh, --translate, --no-translate, --max-translate-minutes, ' +
            '--mode, --max-generate-minutes',
        );
      }
      const { getSource, updateSourceSettings } = await import('../db/sources.ts');
      await withContext(async (ctx) => {
        const { sql } = ctx.db();
        const match = await sourceNamed(ctx, ref);
        for (const [flag, given] of [
          ['--limit', o.limit !== undefined],
          ['--include', o.include !== undefined],
        ] as const) {
          if (given && !kindTakes(match.kind, flag)) {
            const takers = SOURCE_KINDS.filter((k) => kindTakes(k, flag)).join(', ');
            throw await usageError(
              `${flag} does not apply to a ${match.kind} source (source ${match.id}); it applies to ${takers} sources`,
            );
          }
        }
        // transcripts' settings: a web source has pages, not transcripts
        for (const [flag, given] of [
          ['--lang', o.lang !== undefined],
          ['--text', o.text === true],
          ['--chunks', o.chunks === true],
          ['--translate', o.translate !== undefined && o.translate !== false],
        ] as const) {
          if (given && isPageSourceKind(match.kind)) {
            throw await usageError(
              `${flag} does not apply to a ${match.kind} source (source ${match.id}): it keeps web pages, not transcripts`,
            );
          }
        }
        const plan =
          typeof set.cron === 'string'
            ? await plannedCron(set.cron, ctx.config.pipeline.sourceMinIntervalMs)
            : undefined;
        const current = await getSource(sql, match.id);
        // a translation is never bought without a minute budget: given now, or the source's own
        if (
          (set.translateLangs?.length ?? 0) > 0 &&
          (set.maxTranslateMinutes ?? current.maxTranslateMinutes) === null
        ) {
          throw await usageError(
            `--translate needs --max-translate-minutes N (source ${match.id} has none): the most transcript minutes it may have translated (30 credits a minute)`,
          );
        }
        await checkGenerateFlags(match, current, set);
        if (changedSettings(current, set).length === 0) {
          process.stdout.write(`source ${match.id}: nothing changed\n`);
          return;
        }
        // One UPDATE of the columns given: a sync of this source running now read its row when
        // it started and finishes with those settings; its own writes (last_synced_at,
        // last_error) touch other columns, so neither undoes the other. The next sync reads these.
        const { before, after } = await updateSourceSettings(sql, match.id, set);
        const changed = changedSettings(before, after);
        if (changed.length === 0) {
          // the same edit, committed by someone else in between
          process.stdout.write(`source ${match.id}: nothing changed\n`);
          return;
        }
        if (changed.includes('cron')) await refreshSchedulers(ctx);
        process.stdout.write(`source ${match.id}: ${changed.map((k) => showChange(k, before, after)).join(', ')}\n`);
        if (plan && changed.includes('cron')) process.stdout.write(formatFires(plan));
        process.stdout.write(costNotes(match.id, before, after));
      });
    });
}

/**
 * `--mode` and `--max-generate-minutes` of `sources edit`, as `sources add` takes them: a mode only
 * for a media source; a mode that may generate only with a minutes budget (given now, or the
 * source's own); a budget only where something is generated (a media source in auto or generate,
 * a source with --generate-missing).
 */
async function checkGenerateFlags(match: SourceMatch, current: Source, set: Partial<SourceSettings>): Promise<void> {
  if (set.mediaMode !== undefined && match.kind !== 'media') {
    throw await usageError(
      `--mode does not apply to a ${match.kind} source (source ${match.id}): it is the transcript mode of media sources`,
    );
  }
  const mode = set.mediaMode ?? current.mediaMode ?? MEDIA_MODE_DEFAULT;
  const budget = set.maxGenerateMinutes ?? current.maxGenerateMinutes;
  if (match.kind === 'media') {
    if (modeGenerates(mode) && budget === null) {
      throw await usageError(
        `--mode ${mode} may buy generated transcripts (2 credits per started minute): it needs --max-generate-minutes N (source ${match.id} has none)`,
      );
    }
    if (set.maxGenerateMinutes !== undefined && !modeGenerates(mode)) {
      throw await usageError(
        `--max-generate-minutes needs --mode auto or --mode generate: source ${match.id} buys native transcripts only`,
      );
    }
  } else if (set.maxGenerateMinutes !== undefined && !current.generateMissing) {
    throw await usageError(
      `--max-generate-minutes does not apply to source ${match.id} (a ${match.kind} source without --generate-missing): ` +
        'it is the budget of media sources in --mode auto|generate and of sources with --generate-missing',
    );
  }
}
