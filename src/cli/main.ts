/**
 * The `videosite-ingest` command line: one file per command under src/cli/, registered here.
 * Usage errors exit 2 (commander prints the reason), `--help` exits 0.
 */
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { describeError, exitCodeOf, EXIT_USAGE } from './exit.ts';
import { registerBackfillCommand } from './backfill.ts';
import { registerDaemonCommand } from './daemon.ts';
import { registerDemoCommand } from './demo.ts';
import { registerMigrateCommand } from './migrate.ts';
import { registerPruneCommand } from './prune.ts';
import { registerReplayCommand } from './replay.ts';
import { registerSimulatorCommand } from './simulator.ts';
import { registerSourcesCommand } from './sources.ts';
import { registerStatusCommand } from './status.ts';

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

export function buildProgram(): Command {
  const program = new Command()
    .name('videosite-ingest')
    .description(
      'Keeps Postgres filled with the metadata and transcripts of every video in a set of ' +
        'playlists and channels, through the platform-content API (interface v1.3.0).',
    )
    .version(VERSION, '-V, --version', 'print the version and exit')
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', EXIT_CODES_HELP)
    .exitOverride();
  registerMigrateCommand(program);
  registerSourcesCommand(program);
  registerDaemonCommand(program);
  registerBackfillCommand(program);
  registerReplayCommand(program);
  registerPruneCommand(program);
  registerStatusCommand(program);
  registerSimulatorCommand(program);
  registerDemoCommand(program);
  const exitOverride = (cmd: Command) => {
    cmd.exitOverride();
    cmd.commands.forEach(exitOverride);
  };
  exitOverride(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (e: unknown) {
    if (e instanceof CommanderError) {
      // help and version end with exitCode 0; every other commander error is a usage error
      process.exitCode = e.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    process.stderr.write(`${describeError(e)}\n`);
    process.exitCode = exitCodeOf(e);
    // a command that failed half-way may leave a connection retrying (ioredis reconnects
    // forever); the error is reported, so do not let that keep the process alive
    setTimeout(() => process.exit(), FAILED_COMMAND_EXIT_DELAY_MS).unref();
  }
}
