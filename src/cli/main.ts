/**
 * The `videosite-ingest` command line: one file per command under src/cli/, registered here.
 * Only the command that runs is imported: the root's help lists every command from COMMANDS
 * without importing any (from dist/, importing them all took 1.2-1.6 s and ~100 MB peak RSS
 * against 0.16-0.2 s and 45 MB for the root alone, on a busy 2-core machine), and
 * `<command> --help` imports that one command.
 * Usage errors exit 2 (commander prints the reason), `--help` exits 0.
 */
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { escapeControls, VALUE_SHOWN_MAX_CHARS } from '../terminal-text.ts';
import type { ServiceUrls } from './exit.ts';

/** After a command failed, how long open connections get to close before the process exits. */
export const FAILED_COMMAND_EXIT_DELAY_MS = 3_000;

/** The package's version (package.json, read once: it sits beside src/ and dist/ alike). */
export const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

export const EXIT_CODES_HELP =
  '\nExit codes (every command):\n' +
  '  0  done: everything asked for landed (or nothing was due)\n' +
  '  1  something did not land: a batch failed or expired, items left retryable or quarantined\n' +
  '  2  usage or configuration error: a bad option, argument or environment variable (named in the message)\n' +
  '  3  the upstream refused: bad API key, plan without batch access, credits or a daily budget spent\n';

/**
 * A commander error as it is shown: commander quotes the bad value as given (`argument '...'`),
 * so a long one is cut and control characters are written as escapes.
 */
export function shownCommanderError(message: string): string {
  const cut = message.replace(/'([^'\n]*)'/g, (whole, value: string) =>
    value.length > VALUE_SHOWN_MAX_CHARS
      ? `'${value.slice(0, VALUE_SHOWN_MAX_CHARS)}…' (${value.length} characters)`
      : whole,
  );
  return escapeControls(cut);
}

type Register = (program: Command) => void;

interface CommandEntry {
  /** the line the root's help shows: the command's summary, or its description when it has none */
  summary: string;
  load(): Promise<Register>;
}

/**
 * Every command, in the order the help lists them. `summary` repeats what the command's own file
 * says, so the root's help needs no import; test/unit/cli-commands.test.ts checks they agree.
 */
export const COMMANDS = {
  migrate: {
    summary: 'create the database if missing and apply migrations (safe when several processes run it at once)',
    load: async () => (await import('./migrate.ts')).registerMigrateCommand,
  },
  sources: {
    summary: 'manage the sources to keep in sync: channels, playlists, videos, searches, websites, pages and media',
    load: async () => (await import('./sources.ts')).registerSourcesCommand,
  },
  daemon: {
    summary:
      'run the scheduler, poller, sink and webhook delivery workers until SIGTERM/SIGINT (any number of daemons may share Redis and Postgres)',
    load: async () => (await import('./daemon.ts')).registerDaemonCommand,
  },
  backfill: {
    summary: 'sync sources now, wait until every row has landed, exit 0 only if all landed',
    load: async () => (await import('./backfill.ts')).registerBackfillCommand,
  },
  replay: {
    summary:
      're-sink a batch, or quarantined items, from stored raw items (free), or re-submit retryable items (costs credits)',
    load: async () => (await import('./replay.ts')).registerReplayCommand,
  },
  prune: {
    summary:
      'drop raw payloads of items stored more than RAW_RETENTION_DAYS ago, sync runs older than HISTORY_RETENTION_DAYS, ' +
      'credit snapshots beyond one an hour after a week, and change events older than EVENTS_RETENTION_DAYS no webhook still needs; prints rows and bytes freed per table',
    load: async () => (await import('./prune.ts')).registerPruneCommand,
  },
  events: {
    summary:
      'print change events (videos, transcripts, batches, syncs, holds) in id order; --follow waits for new ones',
    load: async () => (await import('./events.ts')).registerEventsCommand,
  },
  holds: {
    summary: 'list or clear the upstream refusals (key, plan, credits) that hold scheduled syncs, per API key',
    load: async () => (await import('./holds.ts')).registerHoldsCommand,
  },
  webhooks: {
    summary: 'manage the endpoints change events are POSTed to (signed; delivered by daemons with the webhooks role)',
    load: async () => (await import('./webhooks.ts')).registerWebhooksCommand,
  },
  export: {
    summary:
      'write the corpus (one record per video and transcript language, one per web page) as JSONL, CSV or Parquet, or subtitle files (SRT, WebVTT), whole or since a cursor',
    load: async () => (await import('./export.ts')).registerExportCommand,
  },
  search: {
    summary:
      'find where words are said (or, by meaning, what is said like them) in the stored transcripts, pages and media: moment and snippet, ranked',
    load: async () => (await import('./search.ts')).registerSearchCommand,
  },
  mcp: {
    summary:
      'serve the corpus to agents over the Model Context Protocol (stdio, or streamable HTTP behind ADMIN_TOKEN): search, read transcripts and pages, sources, recent changes',
    load: async () => (await import('./mcp.ts')).registerMcpCommand,
  },
  status: {
    summary: 'show sources, batches in flight with progress, error counts, credits and storage',
    load: async () => (await import('./status.ts')).registerStatusCommand,
  },
  simulator: {
    summary: 'run the embedded upstream simulator (every endpoint, synthetic catalog, faults)',
    load: async () => (await import('./simulator.ts')).registerSimulatorCommand,
  },
  'embeddings-twin': {
    summary: 'run the offline OpenAI-compatible embeddings server (deterministic vectors, rate limits, faults)',
    load: async () => (await import('./embeddings-twin.ts')).registerEmbeddingsTwinCommand,
  },
  demo: {
    summary: 'start the embedded simulator, migrate a demo database, add demo sources, backfill, print the status',
    load: async () => (await import('./demo.ts')).registerDemoCommand,
  },
} satisfies Record<string, CommandEntry>;

export type CommandName = keyof typeof COMMANDS;

const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

function isCommandName(s: string | undefined): s is CommandName {
  return s !== undefined && Object.hasOwn(COMMANDS, s);
}

/**
 * The command `args` (argv after node and the script) runs, or shows the help of: the first
 * word that is not an option (the root takes no option with a value), or the one after `help`.
 */
export function commandOf(args: readonly string[]): CommandName | undefined {
  const [first, second] = args.filter((a) => !a.startsWith('-'));
  const name = first === 'help' ? second : first;
  return isCommandName(name) ? name : undefined;
}

/**
 * The program with the commands of `loaded` registered in full; every other command is a stub
 * with its name and summary only, so the root's help lists it and a misspelt name still gets
 * commander's "(Did you mean ...?)".
 */
export function buildProgram(loaded: Partial<Record<CommandName, Register>> = {}): Command {
  const program = new Command()
    .name('videosite-ingest')
    .description(
      'Keeps Postgres filled with the metadata and transcripts of every video in a set of ' +
        'playlists and channels, through the platform-content API (interface v1.3.0).',
    )
    .version(VERSION, '-V, --version', 'print the version and exit')
    .showHelpAfterError('(add --help for usage)')
    // before the commands are registered: each inherits it
    .configureOutput({ outputError: (message, write) => write(shownCommanderError(message)) })
    .addHelpText('after', EXIT_CODES_HELP)
    .exitOverride();
  for (const name of COMMAND_NAMES) {
    const register = loaded[name];
    if (register) register(program);
    else program.command(name).description(COMMANDS[name].summary);
  }
  const exitOverride = (cmd: Command) => {
    cmd.exitOverride();
    cmd.commands.forEach(exitOverride);
  };
  exitOverride(program);
  return program;
}

/** The program with `names` loaded in full (default: every command, as the tests inspect it). */
export async function loadProgram(names: readonly CommandName[] = COMMAND_NAMES): Promise<Command> {
  const loaded = await Promise.all(names.map(async (name) => [name, await COMMANDS[name].load()] as const));
  return buildProgram(Object.fromEntries(loaded));
}

/** The configured DATABASE_URL and REDIS_URL, to name the one a refused connection was opened to. */
async function serviceUrls(): Promise<ServiceUrls | undefined> {
  try {
    const { loadConfig } = await import('../config.ts');
    const { databaseUrl, redisUrl } = loadConfig();
    return { databaseUrl, redisUrl };
  } catch {
    // the configuration itself was the error: it is what gets reported
    return undefined;
  }
}

export async function main(argv: string[]): Promise<void> {
  const name = commandOf(argv.slice(2));
  try {
    const program = await loadProgram(name === undefined ? [] : [name]);
    // before the action, not before parsing: `<command> --help` runs no action and loads no configuration
    if (name !== undefined) program.hook('preAction', startTracingFromConfig);
    await program.parseAsync(argv);
  } catch (e: unknown) {
    // help and version end with exitCode 0
    if (e instanceof CommanderError && e.exitCode === 0) {
      process.exitCode = 0;
      return;
    }
    // imported only now: it maps the errors of every part of the program, so it imports them all
    const { describeError, exitCodeOf, EXIT_USAGE } = await import('./exit.ts');
    // every other commander error is a usage error
    if (e instanceof CommanderError) {
      process.exitCode = EXIT_USAGE;
      return;
    }
    process.stderr.write(`${describeError(e, await serviceUrls())}\n`);
    process.exitCode = exitCodeOf(e);
    // a command that failed half-way may leave a connection retrying (ioredis reconnects
    // forever); the error is reported, so do not let that keep the process alive
    setTimeout(() => process.exit(), FAILED_COMMAND_EXIT_DELAY_MS).unref();
  } finally {
    // the spans still buffered go out before the process ends (a daemon after SIGTERM too)
    await tracing?.shutdownTracing();
  }
}

/** src/tracing.ts, once tracing started (loaded only then: `--help` loads no more than main). */
let tracing: typeof import('../tracing.ts') | undefined;

/**
 * Tracing on when OTEL_EXPORTER_OTLP_ENDPOINT is set (src/tracing.ts): before the command's action
 * runs (commander's preAction hook), so its logger and its first request see it. A configuration
 * error is left to the command.
 */
async function startTracingFromConfig(): Promise<void> {
  let settings;
  try {
    const { loadConfig } = await import('../config.ts');
    settings = loadConfig().tracing;
  } catch {
    return;
  }
  if (settings === undefined) return;
  tracing = await import('../tracing.ts');
  await tracing.startTracing(settings);
}
