/**
 * `holds list [--json]` and `holds clear [--key-fingerprint F] [--code C,...]`: the account-level
 * refusals (a bad key, a plan without access, no credits) recorded per API key. A daemon lifts its
 * own key's holds when a re-check gets through; a hold of a key no process uses any more (a
 * mistyped API_KEY) is never re-checked, and this is how to forget it.
 */
import type { Command } from 'commander';
import { keyFingerprint } from '../api/key-fingerprint.ts';
import { activeHolds, clearHolds } from '../db/upstream-holds.ts';
import { HOLD_CODES, type HoldCode } from '../domain/refusals.ts';
import { terminalJson, terminalSafe } from '../terminal-text.ts';
import { createContext } from './context.ts';
import { UsageError } from './exit.ts';
import { renderTable, shortTime } from './table.ts';

/** Why a hold cleared by this command was lifted, as its event records it. */
export const CLEARED_BY_COMMAND = 'cleared by a person: videosite-ingest holds clear';

const FINGERPRINT = /^[0-9a-f]{6,64}$/;

function parseCodes(value: string): HoldCode[] {
  const codes = value.split(',').map((c) => c.trim());
  for (const c of codes) {
    if (!(HOLD_CODES as readonly string[]).includes(c)) {
      throw new UsageError(`--code: ${JSON.stringify(c)} is not a hold code; valid: ${HOLD_CODES.join(', ')}`);
    }
  }
  return codes as HoldCode[];
}

function registerListCommand(holds: Command): void {
  holds
    .command('list')
    .description('print every hold recorded, whichever API key it is about')
    .option('--json', 'print them as JSON', false)
    .action(async (o: { json: boolean }) => {
      const ctx = createContext();
      try {
        const rows = await activeHolds(ctx.db().sql);
        const apiKey = ctx.config.api.apiKey;
        const mine = apiKey === undefined ? undefined : keyFingerprint(apiKey);
        if (o.json) {
          process.stdout.write(`${terminalJson(rows, 2)}\n`);
          return;
        }
        if (rows.length === 0) {
          process.stdout.write('no holds\n');
          return;
        }
        const table = rows.map((h) => [
          h.code,
          h.keyFingerprint === null ? 'every key' : h.keyFingerprint,
          mine === undefined ? '?' : h.keyFingerprint === null || h.keyFingerprint === mine ? 'yes' : 'no',
          shortTime(h.since.toISOString()),
          shortTime(h.lastSeenAt.toISOString()),
          terminalSafe(h.reason),
        ]);
        process.stdout.write(
          `${renderTable(['code', 'key', 'configured key', 'since', 'last seen', 'reason'], table)}\n`,
        );
      } finally {
        await ctx.close();
      }
    });
}

function registerClearCommand(holds: Command): void {
  holds
    .command('clear')
    .description(
      "forget the holds of an API key (default: the configured API_KEY's), so scheduled syncs try again; " +
        'recorded as lifted, with who lifted them',
    )
    .option('--key-fingerprint <hex>', 'the key whose holds to clear, as `status` and `holds list` show it')
    .option('--code <codes>', `only these holds: comma-separated ${HOLD_CODES.join(', ')}`)
    .action(async (o: { keyFingerprint?: string; code?: string }) => {
      const codes = o.code === undefined ? undefined : parseCodes(o.code);
      if (o.keyFingerprint !== undefined && !FINGERPRINT.test(o.keyFingerprint)) {
        throw new UsageError(
          `--key-fingerprint: ${JSON.stringify(o.keyFingerprint)} is not a fingerprint (lowercase hex, as holds list shows it)`,
        );
      }
      const ctx = createContext();
      try {
        const apiKey = ctx.config.api.apiKey;
        const fingerprint = o.keyFingerprint ?? (apiKey === undefined ? undefined : keyFingerprint(apiKey));
        if (fingerprint === undefined) {
          throw new UsageError('holds clear: give --key-fingerprint, or set API_KEY to clear the holds of that key');
        }
        const cleared = await clearHolds(ctx.db().sql, fingerprint, codes, CLEARED_BY_COMMAND);
        process.stdout.write(
          cleared.length === 0
            ? `no hold of key ${fingerprint} to clear\n`
            : `cleared ${cleared.join(', ')} of key ${fingerprint}\n`,
        );
      } finally {
        await ctx.close();
      }
    });
}

export function registerHoldsCommand(program: Command): void {
  const holds = program
    .command('holds')
    .description('list or clear the upstream refusals (key, plan, credits) that hold scheduled syncs, per API key');
  registerListCommand(holds);
  registerClearCommand(holds);
}
