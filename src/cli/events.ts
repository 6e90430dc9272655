/**
 * `events [--since ID] [--type T,...] [--source ID] [--follow] [--json] [--limit N]`: the change
 * events (src/domain/events.ts) in id order. `--json` prints one JSON object a line,
 * `{"id","type","occurred_at","data"}` (the webhook body); otherwise a table. `--follow` keeps
 * printing new events as they commit (LISTEN on the events channel, and a re-read every
 * EVENTS_FOLLOW_REREAD_MS in case a notification is lost) until SIGINT/SIGTERM, then exits 0.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { EventRow } from '../db/events.ts';
import { EVENT_TYPES, EVENTS_CHANNEL, parseEventTypes, type EventType } from '../domain/events.ts';
import { intArg } from './args.ts';
import { createContext } from './context.ts';
import { renderTable, shortTime } from './table.ts';
import { terminalJson, terminalSafe } from '../terminal-text.ts';

/** Events printed without --follow when --limit is not given. */
export const EVENTS_LIMIT_DEFAULT = 1_000;
/** Events read per statement while following. */
const FOLLOW_READ = 1_000;
/** `--follow` re-reads this often even without a notification, ms. */
export const EVENTS_FOLLOW_REREAD_MS = 5_000;
/** The data column of the table is cut to this many characters (`--json` prints it whole). */
const DATA_COLUMN_CHARS = 120;

export function eventTypesArg(value: string): EventType[] {
  const r = parseEventTypes(value);
  if ('invalid' in r)
    throw new InvalidArgumentError(
      `"${r.invalid}" is not an event type (expected a comma-separated list of ${EVENT_TYPES.join(', ')}).`,
    );
  if (r.types.length === 0)
    throw new InvalidArgumentError(`expected a comma-separated list of ${EVENT_TYPES.join(', ')}.`);
  return r.types;
}

/** One event as a JSON line: the webhook body. */
export function eventJson(e: EventRow): string {
  return terminalJson({ id: e.id, type: e.type, occurred_at: e.occurredAt.toISOString(), data: e.data });
}

const dataCell = (e: EventRow) => {
  const text = JSON.stringify(e.data);
  return text.length > DATA_COLUMN_CHARS ? `${text.slice(0, DATA_COLUMN_CHARS - 1)}…` : text;
};
const HEADERS = ['id', 'occurred', 'type', 'source', 'video or page', 'data'];
/** What the event is about: its video, or the URL of a page event. */
const subject = (e: EventRow) => {
  const url = (e.data as { url?: unknown } | null)?.url;
  return e.videoId ?? (typeof url === 'string' ? url : null);
};
const row = (e: EventRow) => [e.id, shortTime(e.occurredAt.toISOString()), e.type, e.sourceId, subject(e), dataCell(e)];

interface EventsOptions {
  since: number;
  type?: EventType[];
  source?: number;
  follow: boolean;
  json: boolean;
  limit?: number;
}

export function registerEventsCommand(program: Command): void {
  program
    .command('events')
    .description(
      'print change events (videos, transcripts, batches, syncs, holds) in id order; --follow waits for new ones',
    )
    .option('--since <id>', 'only events with an id above this', intArg(0, Number.MAX_SAFE_INTEGER), 0)
    .option('--type <types>', `only these types, comma-separated: ${EVENT_TYPES.join(', ')}`, eventTypesArg)
    .option('--source <id>', 'only events about this source', intArg(1, 2_147_483_647))
    .option('--follow', 'keep printing new events until SIGINT/SIGTERM', false)
    .option('--json', 'one JSON object a line: {"id","type","occurred_at","data"}', false)
    .option(
      '--limit <n>',
      `most events printed (default ${EVENTS_LIMIT_DEFAULT}; with --follow: no limit)`,
      intArg(1, 1_000_000),
    )
    .action(async (o: EventsOptions) => {
      const ctx = createContext();
      const { readEvents } = await import('../db/events.ts');
      const sql = ctx.db().sql;
      const filter = { types: o.type, sourceId: o.source };
      try {
        if (!o.follow) {
          const events = await readEvents(sql, { ...filter, afterId: o.since, limit: o.limit ?? EVENTS_LIMIT_DEFAULT });
          process.stdout.write(
            o.json ? events.map((e) => `${eventJson(e)}\n`).join('') : renderTable(HEADERS, events.map(row)),
          );
          return;
        }
        await follow(
          o,
          async (afterId) => readEvents(sql, { ...filter, afterId, limit: FOLLOW_READ }),
          (wake) => sql.listen(EVENTS_CHANNEL, wake, wake).then((l) => () => l.unlisten()),
        );
      } finally {
        await ctx.close();
      }
    });
}

/** Prints events after `o.since` as they come, until SIGINT/SIGTERM (or `o.limit` printed). */
async function follow(
  o: EventsOptions,
  read: (afterId: number) => Promise<EventRow[]>,
  listen: (wake: () => void) => Promise<() => Promise<unknown>>,
): Promise<void> {
  let wakeUp: () => void = () => undefined;
  let stop = false;
  const wake = () => wakeUp();
  const onSignal = () => {
    stop = true;
    wake();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const unlisten = await listen(wake);
  let cursor = o.since;
  let printed = 0;
  let headerShown = false;
  try {
    while (!stop) {
      // armed before reading: a notification that comes while the read runs is not missed
      const woken = new Promise<void>((resolve) => (wakeUp = resolve));
      const events = await read(cursor);
      for (const e of events) {
        if (o.json) process.stdout.write(`${eventJson(e)}\n`);
        else {
          if (!headerShown) process.stdout.write(HEADERS.join('  ') + '\n');
          headerShown = true;
          process.stdout.write(
            row(e)
              .map((c) => (c === null || c === undefined ? '-' : terminalSafe(String(c))))
              .join('  ') + '\n',
          );
        }
        cursor = e.id;
        printed++;
        if (o.limit !== undefined && printed >= o.limit) return;
      }
      if (events.length === FOLLOW_READ) continue;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        woken,
        new Promise<void>((resolve) => (timer = setTimeout(resolve, EVENTS_FOLLOW_REREAD_MS))),
      ]);
      clearTimeout(timer);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await unlisten().catch(() => undefined);
  }
}
