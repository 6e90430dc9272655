/** `migrate`: create the database if missing and apply the committed migrations. */
import type { Command } from 'commander';
import { loadConfig } from '../config.ts';
import { databaseNameOf, migrateDatabase } from '../db/migrate.ts';
import { createLogger, loggingFor } from '../log.ts';

export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('create the database if missing and apply migrations (safe when several processes run it at once)')
    .action(async () => {
      const config = loadConfig();
      const log = createLogger(loggingFor(config, { longRunning: false }));
      const r = await migrateDatabase(config.databaseUrl, log, config.migration);
      process.stdout.write(
        `database ${databaseNameOf(config.databaseUrl)}: ${r.created ? 'created; ' : ''}` +
          `${r.applied === 0 ? 'schema already current' : `${r.applied} migration(s) applied`}\n`,
      );
    });
}
