/**
 * Scenario 26: a webhook receiver down for a minute loses nothing (issue #14). An endpoint is
 * added with the real `webhooks add`; a real `daemon --role webhooks` delivers to it. 10 000
 * events are written (5 transactions, spread over the outage) while nothing listens on the
 * endpoint's port (every attempt: a refused connection) for 60 s of wall clock; then the receiver
 * comes up on that port, answers 204, and the test waits until every event has arrived. Every
 * request's signature is checked as the README tells a receiver to (Standard Webhooks, with the
 * official `standardwebhooks` package), its `webhook-id` against the body, its body against what
 * was written. Figures: duplicates, attempts during the outage, how soon delivery resumed, the time
 * to drain and the delivery throughput after recovery.
 *
 * How it fails when the property breaks: a worker that advanced its cursor past a failed event
 * (or dropped events it could not deliver) shows first in `webhook_deliveries`: the failed
 * attempts of the outage must all be at the first event, the cursor must still be before it, and
 * `webhooks list` must count all 10 000 pending; after recovery every id written must have
 * arrived (`lost`). Checked by hand, with a trigger (installed for the check only) moving the
 * cursor past each failed event, over a 20 s outage: 13 failed attempts at 13 different events
 * (not 1), the cursor past the first event and `pending` short, and lost=15. A worker that gave
 * up silently (no attempt recorded) fails on `failed_attempts`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { recordEvents, type NewEvent } from '../../src/db/events.ts';
import type { EndpointSummary } from '../../src/db/webhooks.ts';
import type { EventType } from '../../src/domain/events.ts';
import { generateSecret } from '../../src/domain/webhook-secrets.ts';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { freePort, waitUntil } from '../helpers/proc.ts';

const EVENTS = 10_000;
/** Transactions the events are written in, one every OUTAGE_MS / WRITES while the receiver is down. */
const WRITES = 5;
const OUTAGE_MS = 60_000;
const SECRET = generateSecret().text;
const TYPES: EventType[] = ['video.added', 'video.changed', 'transcript.added', 'batch.completed'];
/**
 * Retries capped at 2 s (default 10 min): the receiver that comes back is tried again within
 * ~2.5 s (the cap plus a poll interval), which the scenario asserts with RESUME_WITHIN_MS.
 */
const WEBHOOK_ENV = {
  WEBHOOK_TIMEOUT_MS: '2000',
  WEBHOOK_BACKOFF_BASE_MS: '250',
  WEBHOOK_BACKOFF_MAX_MS: '2000',
  WEBHOOK_POLL_INTERVAL_MS: '500',
};
const RESUME_WITHIN_MS = 5_000;

/** What the receiver saw of one request. */
interface Arrival {
  id: number;
  at: number;
  /** signature verified, `webhook-id` equal to the body's id, the body the event written */
  ok: boolean;
}

interface Receiver {
  arrivals: Arrival[];
  /** start listening on `port` (until then, connections to it are refused) */
  up(): Promise<void>;
  close(): Promise<void>;
}

const receiving = new Webhook(SECRET);

/** The receiver a user would write: verifies the signature (and its age) over the raw body. */
function verifySignature(headers: Record<string, string>, body: string): boolean {
  try {
    receiving.verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

function receiver(port: number, written: Map<number, NewEvent>): Receiver {
  const arrivals: Arrival[] = [];
  let server: Server | undefined;
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      const at = performance.now();
      let id = -1;
      let ok = false;
      try {
        const e = JSON.parse(body) as {
          id: number;
          type: string;
          occurred_at: string;
          data: { n?: number; videoId?: string };
        };
        id = e.id;
        const w = written.get(e.id);
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
        );
        ok =
          verifySignature(headers, body) &&
          headers['webhook-id'] === String(e.id) &&
          req.headers['content-type'] === 'application/json' &&
          Object.keys(e).join(',') === 'id,type,occurred_at,data' &&
          w !== undefined &&
          e.type === w.type &&
          e.data.n === w.data.n &&
          e.data.videoId === w.data.videoId &&
          !Number.isNaN(Date.parse(e.occurred_at));
      } catch {
        // not JSON: counted as a bad arrival (ok false)
      }
      arrivals.push({ id, at, ok });
      res.writeHead(204).end();
    });
  };
  return {
    arrivals,
    async up() {
      server = createServer(handle);
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(port, '127.0.0.1', () => resolve());
      });
    },
    async close() {
      if (!server) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    },
  };
}

let rig: FaultRig;
let hook: Receiver | undefined;
let secretDir: string | undefined;
beforeAll(async () => {
  rig = await startFaultRig('26-webhook-outage');
  await rig.migrate();
});
afterAll(async () => {
  await hook?.close();
  await rig?.close();
  if (secretDir) rmSync(secretDir, { recursive: true, force: true });
});

const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));

async function endpoint(id: number): Promise<EndpointSummary & { state: string }> {
  const r = await rig.run(['webhooks', 'list', '--json']);
  expect(r.code, r.stderr).toBe(0);
  const all = JSON.parse(r.stdout) as (EndpointSummary & { state: string })[];
  return all.find((e) => e.id === id)!;
}

it('26 a receiver refusing connections for 60 s, then up: all 10 000 events delivered, none lost, every signature valid', async () => {
  const { sql } = rig.db();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/hooks/videosite`;
  // the secret from a file, as a user gives one (never in the arguments); a loopback receiver: allowed
  secretDir = mkdtempSync(join(tmpdir(), 'vsi-faults-26-'));
  const secretFile = join(secretDir, 'secret');
  writeFileSync(secretFile, SECRET, { mode: 0o600 });
  const added = await rig.run(['webhooks', 'add', url, '--allow-private', '--secret-file', secretFile]);
  expect(added.code, added.stderr).toBe(0);
  const ep = Number(/endpoint (\d+) added/.exec(added.stdout)![1]);
  const daemon = rig.cli(['daemon', '--role', 'webhooks'], WEBHOOK_ENV, 'daemon-26');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');

  // the outage: nothing listens on the port while the events are written and the daemon tries
  const written = new Map<number, NewEvent>();
  const ids: number[] = [];
  const downAt = Date.now();
  const perWrite = EVENTS / WRITES;
  for (let w = 0; w < WRITES; w++) {
    await sleepUntil(downAt + (w * OUTAGE_MS) / WRITES);
    const rows: NewEvent[] = Array.from({ length: perWrite }, (_, i) => {
      const n = w * perWrite + i;
      return {
        type: TYPES[n % TYPES.length]!,
        data: { n, videoId: `vid${String(n).padStart(7, '0')}` },
        videoId: `vid${String(n).padStart(7, '0')}`,
      };
    });
    const got = await sql.begin((tx) => recordEvents(tx, rows));
    got.forEach((id, i) => written.set(id, rows[i]!));
    ids.push(...got);
  }
  await sleepUntil(downAt + OUTAGE_MS);
  const outageS = (Date.now() - downAt) / 1000;

  // before recovery: the daemon kept trying the first event and only it; the cursor did not move
  const [during] = await sql<
    { failed: number; delivered: number; events_tried: number; first_tried: number | null; not_refused: number }[]
  >`
    select count(*) filter (where status = 'failed')::int as failed,
      count(*) filter (where status = 'delivered')::int as delivered,
      count(distinct event_id) filter (where status = 'failed')::int as events_tried,
      min(event_id)::float8 as first_tried,
      count(*) filter (where status = 'failed' and error not like '%ECONNREFUSED%')::int as not_refused
    from webhook_deliveries where endpoint_id = ${ep}`;
  const before = await endpoint(ep);

  hook = receiver(port, written);
  await hook.up();
  const upAt = performance.now();
  // done when the worker says so (the cursor at the last event: every delivery recorded, nothing
  // more on its way), not when the receiver has them all: a worker that skipped events gets here
  // too, and the scenario reports how many it lost. The drain takes ~22 s on a quiet machine, but
  // it is CPU-bound (a signature and a request per event): beside the other lane of the suite and
  // other tests on 2 cores it once took over 120 s, and beside two CPU hogs more than the 300 s
  // this wait had. Its time is a figure (drain_s), not a bound: the wait fails only when the
  // cursor stops moving for STALL_MS (a worker stuck), however long the whole drain takes.
  const STALL_MS = 60_000;
  let lastCursor = -1;
  let movedAt = Date.now();
  await waitUntil(
    async () => {
      const [r] = await sql<
        { cursor: number }[]
      >`select cursor::float8 as cursor from webhook_endpoints where id = ${ep}`;
      if (r!.cursor !== lastCursor) {
        lastCursor = r!.cursor;
        movedAt = Date.now();
      }
      if (r!.cursor === ids.at(-1)) return true;
      if (Date.now() - movedAt > STALL_MS) {
        throw new Error(`the cursor stopped at ${r!.cursor} (last event ${ids.at(-1)}) for ${STALL_MS} ms`);
      }
      return undefined;
    },
    1_200_000,
    'the cursor at the last event',
  );
  const after = await endpoint(ep);
  daemon.kill('SIGTERM');
  const exit = await daemon.exited;

  const arrivals = hook.arrivals;
  const received = new Set(arrivals.map((a) => a.id));
  const lost = ids.filter((id) => !received.has(id)).length;
  const unexpected = [...received].filter((id) => !written.has(id)).length;
  const firstSeen: number[] = [];
  const seen = new Set<number>();
  let lastNewAt = upAt;
  for (const a of arrivals) {
    if (seen.has(a.id)) continue;
    seen.add(a.id);
    firstSeen.push(a.id);
    lastNewAt = a.at;
  }
  const firstAt = arrivals[0]!.at;
  const [deliveries] = await sql<{ delivered: number; failed: number }[]>`
    select count(*) filter (where status = 'delivered')::int as delivered, count(*) filter (where status = 'failed')::int as failed
    from webhook_deliveries where endpoint_id = ${ep}`;
  const resumedAfterMs = firstAt - upAt;
  const drainS = (lastNewAt - upAt) / 1000;
  figures('26 webhook-outage', {
    events: ids.length,
    outage_s: outageS,
    failed_attempts: during!.failed,
    delivered: received.size,
    lost,
    duplicates: arrivals.length - received.size,
    bad_signatures_or_bodies: arrivals.filter((a) => !a.ok).length,
    resumed_after_s: resumedAfterMs / 1000,
    drain_s: drainS,
    events_per_s: Math.round(received.size / ((lastNewAt - firstAt) / 1000)),
  });

  expect(ids).toHaveLength(EVENTS);
  expect(outageS).toBeGreaterThanOrEqual(OUTAGE_MS / 1000);
  // the outage as recorded: attempts all along (backoff capped at 2 s: ~30 in 60 s), every one a
  // refused connection at the first event, nothing delivered, the cursor before the first event
  expect(during!.failed).toBeGreaterThanOrEqual(10);
  expect(during!.delivered).toBe(0);
  expect(during!.not_refused).toBe(0);
  expect(during!.events_tried).toBe(1);
  expect(during!.first_tried).toBe(ids[0]);
  expect(before).toMatchObject({ enabled: true, cursor: ids[0]! - 1, pending: EVENTS });
  expect(before.failures).toBeGreaterThanOrEqual(during!.failed);
  expect(before.state).toMatch(/^failing since /);

  expect(lost).toBe(0);
  expect(unexpected).toBe(0);
  expect(received.size).toBe(EVENTS);
  expect(arrivals.every((a) => a.ok)).toBe(true);
  // in id order after recovery; every POST answered 204 is recorded delivered
  expect(firstSeen).toEqual(ids);
  expect(deliveries!.delivered).toBe(arrivals.length);
  expect(deliveries!.failed).toBeGreaterThanOrEqual(during!.failed);
  expect(resumedAfterMs).toBeLessThan(RESUME_WITHIN_MS);
  expect(after).toMatchObject({
    enabled: true,
    cursor: ids.at(-1),
    pending: 0,
    failures: 0,
    failingSince: null,
    state: 'ok',
  });
  expect(exit.code).toBe(0);
}, 1_500_000);
