/**
 * The `videosite-ingest` command line: one file per command under src/cli/, registered here.
 * Usage errors exit 2 (commander prints the reason), `--help` exits 0.
 */
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

export function buildProgram(): Command {
  const program = new Command()
    .name('videosite-ingest')
    .description(
      'Keeps Postgres filled with the metadata and transcripts of every video in a set of ' +
        'playlists and channels, through the platform-content API (interface v1.3.0).',
    )
    .showHelpAfterError('(add --help for usage)')
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
