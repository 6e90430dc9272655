/**
 * `webhooks add URL [--events T,...] [--secret S] | list [--json] | enable ID | remove ID | test ID`: the
 * endpoints change events are POSTed to (by daemons with the `webhooks` role; the scheme is in
 * README "Change events and webhooks"). The secret is printed once, by `add`, and never again:
 * not by `list`, not in logs or errors.
 */
import { randomBytes } from 'node:crypto';
import { InvalidArgumentError, type Command } from 'commander';
import type { EndpointSummary } from '../db/webhooks.ts';
import type { EventType } from '../domain/events.ts';
import { webhookUrlProblem } from '../domain/webhooks.ts';
import { intArg } from './args.ts';
import { createContext } from './context.ts';
import { eventTypesArg } from './events.ts';
import { EXIT_NOT_LANDED, UsageError } from './exit.ts';
import { renderTable, shortTime } from './table.ts';

/** Bytes of a generated secret (printed as hex). */
export const WEBHOOK_SECRET_BYTES = 32;
/** Shortest secret accepted from `--secret`: a guessable key would sign nothing. */
export const WEBHOOK_SECRET_MIN_CHARS = 16;

function urlArg(value: string): string {
  const problem = webhookUrlProblem(value);
  if (problem !== undefined) throw new InvalidArgumentError(`${problem}.`);
  return value;
}

/**
 * Checked in the action, not by a commander argument parser: commander's message for a refused
 * option value quotes the value, and a secret is a secret even when it is a bad one.
 */
function checkSecret(value: string): void {
  if (value.length < WEBHOOK_SECRET_MIN_CHARS || !/^[\x21-\x7e]+$/.test(value)) {
    throw new UsageError(`--secret: expected at least ${WEBHOOK_SECRET_MIN_CHARS} printable ASCII characters without blanks (value hidden)`);
  }
}

/** What a person reads of an endpoint's health. */
export function endpointState(e: Pick<EndpointSummary, 'enabled' | 'disabledAt' | 'disabledReason' | 'failingSince' | 'nextAttemptAt'>): string {
  if (!e.enabled) return `disabled${e.disabledAt ? ` ${shortTime(e.disabledAt.toISOString())}` : ''}: ${e.disabledReason ?? 'no reason recorded'}`;
  if (e.failingSince) {
    return `failing since ${shortTime(e.failingSince.toISOString())}${e.nextAttemptAt ? `, next attempt ${shortTime(e.nextAttemptAt.toISOString())}` : ''}`;
  }
  return 'ok';
}

export function registerWebhooksCommand(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description('manage the endpoints change events are POSTed to (signed; delivered by daemons with the webhooks role)');

  webhooks
    .command('add')
    .description('add an endpoint; prints its secret once (generated unless --secret is given)')
    .argument('<url>', 'http:// or https:// URL the events are POSTed to', urlArg)
    .option('--events <types>', 'only these event types, comma-separated (default: every type)', eventTypesArg)
    .option('--secret <secret>', `the HMAC key of the signature (at least ${WEBHOOK_SECRET_MIN_CHARS} characters; default: generated)`)
    .action(async (url: string, o: { events?: EventType[]; secret?: string }) => {
      if (o.secret !== undefined) checkSecret(o.secret);
      const ctx = createContext();
      try {
        const { addEndpoint } = await import('../db/webhooks.ts');
        const secret = o.secret ?? randomBytes(WEBHOOK_SECRET_BYTES).toString('hex');
        const id = await addEndpoint(ctx.db().sql, { url, eventTypes: o.events ?? null, secret });
        process.stdout.write(
          `webhook endpoint ${id} added: ${url} (events: ${o.events?.join(', ') ?? 'all'})\n` +
            `secret: ${secret}\n` +
            'the secret is shown only now: keep it to verify the Videosite-Signature header\n',
        );
      } finally {
        await ctx.close();
      }
    });

  webhooks
    .command('list')
    .description('list the endpoints with their state (never their secrets)')
    .option('--json', 'print the endpoints as JSON', false)
    .action(async (o: { json: boolean }) => {
      const ctx = createContext();
      try {
        const { listEndpoints, PENDING_COUNT_CAP } = await import('../db/webhooks.ts');
        const rows = await listEndpoints(ctx.db().sql);
        if (o.json) {
          process.stdout.write(`${JSON.stringify(rows.map((r) => ({ ...r, state: endpointState(r) })), null, 2)}\n`);
          return;
        }
        process.stdout.write(
          renderTable(
            ['id', 'url', 'events', 'cursor', 'pending', 'last delivered', 'state'],
            rows.map((r) => [
              r.id,
              r.url,
              r.eventTypes?.join(',') ?? 'all',
              r.cursor,
              r.pending > PENDING_COUNT_CAP ? `>${PENDING_COUNT_CAP}` : r.pending,
              r.lastDeliveredAt ? shortTime(r.lastDeliveredAt.toISOString()) : 'never',
              endpointState(r),
            ]),
          ),
        );
      } finally {
        await ctx.close();
      }
    });

  webhooks
    .command('enable')
    .description('deliver again to an endpoint that was disabled after failing, from where it stopped (events pruned meanwhile are not sent)')
    .argument('<id>', 'the endpoint (see webhooks list)', intArg(1, 2_147_483_647))
    .action(async (id: number) => {
      const ctx = createContext();
      try {
        const { enableEndpoint } = await import('../db/webhooks.ts');
        if (!(await enableEndpoint(ctx.db().sql, id))) throw new UsageError(`no webhook endpoint ${id} (see: videosite-ingest webhooks list)`);
        process.stdout.write(`webhook endpoint ${id} enabled: daemons with the webhooks role deliver to it again\n`);
      } finally {
        await ctx.close();
      }
    });

  webhooks
    .command('remove')
    .description('remove an endpoint and its delivery records')
    .argument('<id>', 'the endpoint (see webhooks list)', intArg(1, 2_147_483_647))
    .action(async (id: number) => {
      const ctx = createContext();
      try {
        const { removeEndpoint } = await import('../db/webhooks.ts');
        if (!(await removeEndpoint(ctx.db().sql, id))) throw new UsageError(`no webhook endpoint ${id} (see: videosite-ingest webhooks list)`);
        process.stdout.write(`webhook endpoint ${id} removed\n`);
      } finally {
        await ctx.close();
      }
    });

  webhooks
    .command('test')
    .description('POST a webhook.test event to an endpoint now and print its answer code (exit 1 unless 2xx)')
    .argument('<id>', 'the endpoint (see webhooks list)', intArg(1, 2_147_483_647))
    .action(async (id: number) => {
      const ctx = createContext();
      try {
        const { endpointForTest, recordTestAttempt } = await import('../db/webhooks.ts');
        const { deliveryAttempt, postEvent, webhookAgent, webhookBody } = await import('../pipeline/webhooks.ts');
        const { WEBHOOK_TEST_EVENT } = await import('../domain/events.ts');
        const sql = ctx.db().sql;
        const ep = await endpointForTest(sql, id);
        if (!ep) throw new UsageError(`no webhook endpoint ${id} (see: videosite-ingest webhooks list)`);
        const timeoutMs = ctx.config.pipeline.webhookTimeoutMs;
        // id 0: no stored event has it, so a receiver that dedupes on ids never drops a real one for it
        const body = webhookBody({ id: 0, type: WEBHOOK_TEST_EVENT, occurredAt: new Date(), data: { endpointId: id } });
        const agent = webhookAgent(timeoutMs);
        const out = await postEvent(agent, ep, 0, body, { timeoutMs }).finally(() => agent.close());
        await recordTestAttempt(sql, deliveryAttempt(id, { id: 0, type: WEBHOOK_TEST_EVENT }, 1, out));
        const took = `${Math.round(out.durationMs)} ms`;
        if (out.responseCode !== null) process.stdout.write(`${out.responseCode}\n`);
        if (out.delivered) {
          process.stderr.write(`endpoint ${id} answered ${out.responseCode} in ${took}\n`);
        } else {
          process.stderr.write(`error: endpoint ${id} did not accept the test event (${out.error ?? 'failed'}, ${took})\n`);
          process.exitCode = EXIT_NOT_LANDED;
        }
      } finally {
        await ctx.close();
      }
    });
}
