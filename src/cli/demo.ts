/**
 * `demo`: the whole product on one machine with no key and no network. It starts the embedded
 * simulator, migrates a demo database beside the configured one (`<name>_demo`, so a real
 * database is never touched), registers a channel and a playlist, backfills them, and prints the
 * status. Run it twice: the second run finds everything present and spends only the listings.
 */
import type { Command } from 'commander';
import { databaseNameOf, migrateDatabase, withDatabase } from '../db/migrate.ts';
import { collectStatus } from '../pipeline/read/status.ts';
import { SourceExistsError } from '../db/sources.ts';
import { registerSource, type NewSourceInput } from '../pipeline/commands/sources.ts';
import { startSimulator } from '../simulator/server.ts';
import { backfillWithContext, renderBackfillReport } from './backfill.ts';
import { createContext } from './context.ts';
import { renderStatus } from './status.ts';
import { shellQuote } from '../shell-quote.ts';
import { terminalSafe } from '../terminal-text.ts';
import { urlWithoutPassword } from '../url-credentials.ts';

export const DEMO_TIMEOUT_MS = 5 * 60_000;
export const DEMO_QUEUE_PREFIX = '{vsi-demo}';

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('start the embedded simulator, migrate a demo database, add demo sources, backfill, print the status')
    .action(async () => {
      const sim = await startSimulator({
        seed: 1,
        catalog: { channels: 3, videosPerChannel: { min: 40, max: 60 } },
        jobs: { queuedMs: 300, itemsPerSecond: 150 },
      });
      let ctx;
      try {
        ctx = createContext({
          override: (c) => {
            const demoDb = `${databaseNameOf(c.databaseUrl)}_demo`.slice(0, 63);
            return {
              ...c,
              api: { ...c.api, baseUrl: sim.baseUrl, apiKey: sim.apiKey, platform: sim.platform },
              databaseUrl: withDatabase(c.databaseUrl, demoDb),
              queuePrefix: DEMO_QUEUE_PREFIX,
              // the demo's own output tells the story; routine info lines would bury it
              logLevel: c.logLevelSet ? c.logLevel : 'warn',
              pipeline: { ...c.pipeline, pollInitialDelayMs: 500, pollMinDelayMs: 250, pollMaxDelayMs: 2_000 },
            };
          },
        });
        const { log, config } = ctx;
        process.stderr.write(`demo: simulator at ${sim.baseUrl}; database ${databaseNameOf(config.databaseUrl)}\n`);
        await migrateDatabase(config.databaseUrl, log, config.migration);

        const [first, second] = sim.catalog.channels();
        const wanted: NewSourceInput[] = [];
        if (first)
          wanted.push({ kind: 'channel', ref: first.handle, limit: 60, langs: ['en'], textOnly: false, cron: null });
        if (second?.playlistIds[0]) {
          wanted.push({
            kind: 'playlist',
            ref: second.playlistIds[0],
            limit: 30,
            langs: ['en'],
            textOnly: true,
            cron: null,
          });
        }
        const { sql } = ctx.db();
        for (const w of wanted) {
          try {
            const s = await registerSource({ sql, api: ctx.api() }, w);
            process.stderr.write(
              terminalSafe(`demo: added source ${s.id}: ${s.kind} ${s.title} (${s.externalId})`) + '\n',
            );
          } catch (e: unknown) {
            if (!(e instanceof SourceExistsError)) throw e;
            process.stderr.write(`demo: source ${e.existingId} already registered (${w.kind} ${w.ref})\n`);
          }
        }

        const { report, exitCode } = await backfillWithContext(ctx, {
          all: true,
          wait: true,
          timeout: DEMO_TIMEOUT_MS,
        });
        process.stdout.write(renderBackfillReport(report));
        process.stdout.write('\n');
        process.stdout.write(renderStatus(await collectStatus(sql)));
        // single-quoted: in double quotes a shell would expand $(...) or `...` from the URL
        process.stdout.write(
          `\nThe rows are in Postgres: psql ${shellQuote(urlWithoutPassword(config.databaseUrl))} -c ${shellQuote('select id, title from videos limit 5')}\n`,
        );
        process.exitCode = exitCode;
      } finally {
        await ctx?.close();
        await sim.close();
      }
    });
}
