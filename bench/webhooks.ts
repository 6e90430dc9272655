/**
 * `node --import tsx bench/webhooks.ts [--events N]` (and the last section of `npm run bench`):
 * webhook delivery throughput (issue #14). A real `daemon --role webhooks` (default settings)
 * delivers WEBHOOK_BENCH_EVENTS events, written in one transaction, to one endpoint: a local
 * receiver that verifies each signature and answers 204. Timed from the commit to the last
 * event's arrival: one endpoint is delivered one POST at a time, in id order (each with a lease
 * renewal before and a recorded attempt after), so this is the rate one endpoint catches up at,
 * e.g. after an outage. Its own database and queue prefix, dropped at the end.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { loadConfig } from '../src/config.ts';
import { createDb } from '../src/db/connection.ts';
import { recordEvents, type NewEvent } from '../src/db/events.ts';
import { migrateDatabase, quoteIdentifier, withDatabase } from '../src/db/migrate.ts';
import { addEndpoint } from '../src/db/webhooks.ts';
import { generateSecret } from '../src/domain/webhook-secrets.ts';
import { closeRedis, createRedis, deletePrefixKeys } from '../src/queues/connection.ts';
import { CliProcess, REPO_ROOT } from './procs.ts';

/** Events delivered in the measured run. */
export const WEBHOOK_BENCH_EVENTS = 5_000;
const SECRET = generateSecret();
const DAEMON_START_TIMEOUT_MS = 60_000;
const DRAIN_TIMEOUT_MS = 10 * 60_000;

export interface WebhookFigures {
  events: number;
  /** commit of the events to the arrival of the last one, s */
  wallS: number;
  eventsPerS: number;
  /** commit to the first arrival (the LISTEN wake-up and the first claim), ms */
  firstArrivalMs: number;
  /** POSTs the receiver got (events + duplicates) */
  requests: number;
  duplicates: number;
  badSignatures: number;
  /** attempts recorded in webhook_deliveries as delivered */
  recordedDelivered: number;
  daemon: { cpuS: number; peakRssMb: number };
}

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

export async function measureWebhookDelivery(opts: {
  events?: number;
  logDir: string;
  nodeArgs?: string[];
}): Promise<WebhookFigures> {
  const n = opts.events ?? WEBHOOK_BENCH_EVENTS;
  const config = loadConfig({});
  const tag = randomBytes(4).toString('hex');
  const dbUrl = withDatabase(config.databaseUrl, `vsi_bench_webhooks_${tag}`);
  const prefix = `{vsi-bench-webhooks-${tag}}`;
  mkdirSync(opts.logDir, { recursive: true });

  const arrivals: { id: number; at: number }[] = [];
  let badSignatures = 0;
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      const signed = `${String(req.headers['webhook-id'])}.${String(req.headers['webhook-timestamp'])}.${body}`;
      if (req.headers['webhook-signature'] !== `v1,${createHmac('sha256', SECRET.key).update(signed).digest('base64')}`)
        badSignatures++;
      arrivals.push({ id: (JSON.parse(body) as { id: number }).id, at: performance.now() });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

  await migrateDatabase(dbUrl);
  const db = createDb(dbUrl, { max: 2 });
  const redis = createRedis(config.redisUrl);
  let daemon: CliProcess | undefined;
  try {
    const endpointId = await addEndpoint(db.sql, {
      url,
      eventTypes: null,
      allowPrivate: true,
      key: SECRET.key,
      secretsKey: undefined,
    });
    daemon = CliProcess.start(
      'webhooks-daemon',
      ['daemon', '--role', 'webhooks'],
      {
        // the webhooks role never calls the API; the configuration needs one all the same
        API_BASE_URL: 'http://127.0.0.1:9/v1',
        API_KEY: 'vsi-bench-webhooks-key',
        DATABASE_URL: dbUrl,
        REDIS_URL: config.redisUrl,
        QUEUE_PREFIX: prefix,
        LOG_LEVEL: 'info',
      },
      opts.logDir,
      opts.nodeArgs ?? [],
    );
    await daemon.waitForLog((e) => e.event === 'daemon.started', DAEMON_START_TIMEOUT_MS);

    const rows: NewEvent[] = Array.from({ length: n }, (_, i) => ({
      type: 'video.added',
      data: { videoId: `vid${String(i).padStart(7, '0')}`, sourceId: 1, jobId: 'bench' },
      videoId: `vid${String(i).padStart(7, '0')}`,
    }));
    const ids = await db.sql.begin((tx) => recordEvents(tx, rows));
    const committedAt = performance.now();
    const lastId = ids.at(-1)!;
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    for (;;) {
      const [r] = await db.sql<
        { cursor: number }[]
      >`select cursor::float8 as cursor from webhook_endpoints where id = ${endpointId}`;
      if (r!.cursor >= lastId) break;
      if (Date.now() > deadline)
        throw new Error(
          `webhooks: ${n} events not delivered within ${DRAIN_TIMEOUT_MS / 1000} s (cursor ${r!.cursor}, last ${lastId})`,
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const distinct = new Set(arrivals.map((a) => a.id));
    const missing = ids.filter((id) => !distinct.has(id)).length;
    if (missing > 0) throw new Error(`webhooks: the cursor passed the last event but ${missing} events never arrived`);
    const lastNew = arrivals.findLast((a) => a.id === lastId)!;
    const [recorded] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where endpoint_id = ${endpointId} and status = 'delivered'`;
    const d = await daemon.stop(15_000);
    daemon = undefined;
    const wallS = (lastNew.at - committedAt) / 1000;
    return {
      events: n,
      wallS: round(wallS, 2),
      eventsPerS: round(n / wallS, 0),
      firstArrivalMs: round(arrivals[0]!.at - committedAt, 0),
      requests: arrivals.length,
      duplicates: arrivals.length - distinct.size,
      badSignatures,
      recordedDelivered: recorded!.n,
      daemon: { cpuS: round(d.cpuS), peakRssMb: round(d.peakRssMb) },
    };
  } finally {
    await daemon?.stop(15_000);
    await db.close();
    await deletePrefixKeys(redis, prefix).catch(() => {});
    await closeRedis(redis);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const admin = postgres(withDatabase(config.databaseUrl, 'postgres'), { max: 1, onnotice: () => {} });
    await admin
      .unsafe(`drop database if exists ${quoteIdentifier(`vsi_bench_webhooks_${tag}`)} with (force)`)
      .finally(() => admin.end({ timeout: 5 }));
  }
}

export function renderWebhookDelivery(f: WebhookFigures): string {
  return (
    `Webhook delivery (one endpoint, receiver answering 204, default settings): ${f.events} events in ${f.wallS} s = ${f.eventsPerS} events/s ` +
    `from commit to the last arrival (first after ${f.firstArrivalMs} ms); ${f.requests} requests, ${f.duplicates} duplicates, ` +
    `${f.badSignatures} bad signatures, ${f.recordedDelivered} attempts recorded delivered; daemon CPU ${f.daemon.cpuS} s, peak RSS ${f.daemon.peakRssMb} MB\n`
  );
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { events: { type: 'string', default: String(WEBHOOK_BENCH_EVENTS) } } });
  const events = Number(values.events);
  if (!(Number.isInteger(events) && events > 0)) throw new Error('--events: expected a positive integer');
  measureWebhookDelivery({ events, logDir: join(REPO_ROOT, 'bench', 'results', 'logs') })
    .then((f) => process.stdout.write(renderWebhookDelivery(f)))
    .catch((e: unknown) => {
      process.stderr.write(`bench:webhooks failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    });
}
