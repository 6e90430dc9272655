/**
 * OpenTelemetry traces (issue #33), end to end: `backfill --all --no-wait` submits the batches of
 * two sources and a daemon polls and lands them, both exporting to a local OTLP/HTTP receiver
 * (JSON). One root `sync` span per sync, its stages as children, the daemon's `poll` spans in the
 * trace of the sync that submitted the batch (the traceparent travels in the poll job's data),
 * the upstream attempts as client spans with their status and billed credits, log lines with the
 * trace ID, and never the API key anywhere in what was exported. With OTEL_EXPORTER_OTLP_ENDPOINT
 * unset, no module of the SDK or the exporter is even loaded.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Source } from '../../src/db/schema.ts';
import { BATCH_IN_FLIGHT_STATUSES } from '../../src/domain/batches.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { createPipelineHarness, runCli, waitFor, type PipelineHarness } from '../helpers/pipeline.ts';
import { startCli, type CliProcess } from '../helpers/proc.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** A local OTLP/HTTP collector: every body POSTed to /v1/traces, as received. */
function startReceiver(): Promise<{ server: Server; url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') bodies.push(body);
      res.writeHead(req.url === '/v1/traces' ? 200 : 404, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}`, bodies });
    });
  });
}

function spansOf(bodies: string[]): OtlpSpan[] {
  const out: OtlpSpan[] = [];
  for (const b of bodies) {
    const doc = JSON.parse(b) as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
    for (const rs of doc.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) out.push(...(ss.spans ?? []));
  }
  return out;
}

function attr(s: OtlpSpan, key: string): unknown {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  if (v === undefined) return undefined;
  return Object.values(v)[0];
}

/** The ID as the OTLP JSON encoding writes it (hex), whatever the exporter chose. */
function hex(id: string): string {
  return /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex');
}

let h: PipelineHarness;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let sources: Source[];

beforeAll(async () => {
  h = await createPipelineHarness('tracing', { catalog: { channels: 2, channelSizes: [12, 8] } });
  receiver = await startReceiver();
  const [c0, c1] = h.sim.catalog.channels();
  sources = [
    await registerSource(h.deps, {
      kind: 'channel',
      ref: c0!.handle,
      limit: 100,
      langs: ['en'],
      textOnly: false,
      cron: null,
    }),
    await registerSource(h.deps, {
      kind: 'playlist',
      ref: c1!.playlistIds[0]!,
      limit: 100,
      langs: ['en'],
      textOnly: false,
      cron: null,
    }),
  ];
});

afterAll(async () => {
  receiver?.server.close();
  await h?.close();
});

describe('traces, OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  let daemon: CliProcess | undefined;
  afterAll(() => daemon?.kill('SIGKILL'));

  it('backfill and a daemon export one trace per sync, polls included, with no secret', async () => {
    const env = { ...h.env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, LOG_LEVEL: 'debug' };
    daemon = startCli(['daemon', '--role', 'poller,sink'], { ...env, RECONCILE_INTERVAL_MS: '1000' }, 'daemon');
    await daemon.waitForLog((l) => l.event === 'daemon.started', 30_000, 'daemon.started');
    const backfill = await runCli(['backfill', '--all', '--no-wait'], env, 60_000);
    expect(backfill.code, backfill.stderr).toBe(0);
    const [counted] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from batches`;
    expect(counted!.n).toBeGreaterThan(0);
    await waitFor(
      async () => {
        const [r] = await h.database.sql<{ open: number }[]>`
          select count(*)::int as open from batches where status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])`;
        return r!.open === 0 ? true : undefined;
      },
      60_000,
      'every batch polled to its end',
    );
    await waitFor(
      async () => {
        const [r] = await h.database.sql<{ landed: number; queued: number; transcripts: number }[]>`
          select (select count(*)::int from batch_items where state = 'landed') as landed,
            (select count(*)::int from search_index_queue) as queued,
            (select count(*)::int from transcripts) as transcripts`;
        return r!.landed === 0 && r!.queued === 0 && r!.transcripts > 0 ? true : undefined;
      },
      90_000,
      'every item sunk and every transcript indexed',
    );
    const [stored] = await h.database.sql<
      { transcripts: number }[]
    >`select count(*)::int as transcripts from transcripts`;
    // a batch whose items are left landed (as by an older version): the daemon's reconcile gives
    // it a sink job, which starts a trace of its own (no sync submitted it)
    const [resunk] = await h.database.sql<{ job_id: string }[]>`
      update batch_items set state = 'landed', sunk_at = null
      where job_id = (select job_id from batches where kind = 'transcript' order by job_id limit 1)
      returning job_id`;
    await waitFor(
      async () => {
        const [r] = await h.database.sql<{ landed: number }[]>`
          select count(*)::int as landed from batch_items where state = 'landed'`;
        return r!.landed === 0 ? true : undefined;
      },
      60_000,
      'the landed batch sunk by the sink queue',
    );
    daemon.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);

    const spans = spansOf(receiver.bodies);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const roots = spans.filter((s) => s.name === 'sync');
    // one root span per sync: one sync per source
    expect(roots).toHaveLength(sources.length);
    for (const r of roots) expect(r.parentSpanId ?? '').toBe('');
    expect(roots.map((r) => attr(r, 'videosite.source.id')).sort()).toEqual(
      sources.map((s) => s.id).sort((a, b) => a - b),
    );
    expect(roots.map((r) => attr(r, 'videosite.source.kind')).sort()).toEqual(['channel', 'playlist']);
    const rootOf = (s: OtlpSpan): OtlpSpan => {
      let cur = s;
      while (cur.parentSpanId && byId.has(cur.parentSpanId)) cur = byId.get(cur.parentSpanId)!;
      return cur;
    };
    const syncTraces = new Set(roots.map((r) => r.traceId));
    for (const name of ['listing', 'credit_check', 'submit']) {
      const named = spans.filter((s) => s.name === name);
      expect(named.length, name).toBeGreaterThan(0);
      for (const s of named) expect(rootOf(s).name, name).toBe('sync');
    }
    const submits = spans.filter((s) => s.name === 'submit');
    expect(submits.every((s) => typeof attr(s, 'videosite.job_id') === 'string')).toBe(true);

    // the daemon's polls: in the trace of the sync that submitted their batch
    const polls = spans.filter((s) => s.name === 'poll');
    expect(polls.length).toBeGreaterThanOrEqual(submits.length);
    for (const p of polls) {
      expect(syncTraces.has(p.traceId), `poll of ${String(attr(p, 'videosite.job_id'))}`).toBe(true);
      const submit = submits.find((s) => attr(s, 'videosite.job_id') === attr(p, 'videosite.job_id'));
      expect(submit?.traceId).toBe(p.traceId);
    }
    const chunks = spans.filter((s) => s.name === 'land_chunk');
    expect(chunks.length).toBeGreaterThan(0);
    for (const c of chunks) expect(byId.get(c.parentSpanId!)?.name).toBe('poll');

    // the sink job reconcile rebuilt: a root of a new trace, with its batch's job ID
    const sinks = spans.filter((s) => s.name === 'sink');
    expect(sinks.length).toBeGreaterThan(0);
    for (const s of sinks) {
      expect(attr(s, 'videosite.job_id')).toBe(resunk!.job_id);
      expect(s.parentSpanId ?? '').toBe('');
      expect(syncTraces.has(s.traceId)).toBe(false);
    }
    // the search indexer: spans of their own (a build serves transcripts of many syncs), with
    // how many transcripts each indexed: every stored one, once
    const indexed = spans.filter((s) => s.name === 'search_index');
    for (const s of indexed) expect(s.parentSpanId ?? '').toBe('');
    expect(indexed.reduce((n, s) => n + Number(attr(s, 'videosite.transcripts_indexed') ?? 0), 0)).toBe(
      stored!.transcripts,
    );

    // upstream attempts: client spans with method, path, status, billed credits, job ID
    const client = spans.filter((s) => s.kind === 3);
    expect(client.length).toBeGreaterThan(0);
    for (const c of client) {
      expect(attr(c, 'http.request.method')).toMatch(/^(GET|POST)$/);
      expect(String(attr(c, 'url.path'))).toMatch(/^\/v1\//);
      expect(String(attr(c, 'url.path'))).not.toContain('?');
      expect(attr(c, 'http.response.status_code')).toBe(200);
    }
    const posts = client.filter((c) => attr(c, 'http.request.method') === 'POST');
    expect(posts.length).toBeGreaterThan(0);
    for (const c of posts) {
      expect(typeof attr(c, 'videosite.job_id')).toBe('string');
      expect(Number(attr(c, 'videosite.credits_billed'))).toBeGreaterThan(0);
      expect(byId.get(c.parentSpanId!)?.name).toBe('submit');
    }
    const pollGets = client.filter(
      (c) => byId.get(c.parentSpanId ?? '')?.name === 'poll' && String(attr(c, 'url.path')).includes('/batch/'),
    );
    expect(pollGets.length).toBeGreaterThan(0);
    for (const c of pollGets)
      expect(attr(c, 'videosite.job_id')).toBe(attr(byId.get(c.parentSpanId!)!, 'videosite.job_id'));

    // never the key, nor a header carrying it
    const exported = receiver.bodies.join('\n');
    expect(exported).not.toContain(h.sim.apiKey);
    expect(exported.toLowerCase()).not.toContain('x-api-key');

    // log lines carry the trace: the backfill's submissions and the daemon's polls
    const traced = (text: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { event?: string; trace_id?: string; span_id?: string })
        .filter((l) => l.trace_id !== undefined);
    const backfillTraced = traced(backfill.stderr);
    expect(backfillTraced.length).toBeGreaterThan(0);
    const allTraces = new Set(spans.map((s) => hex(s.traceId)));
    for (const l of backfillTraced) expect(allTraces.has(l.trace_id!)).toBe(true);
    const daemonTraced = traced(daemon.stderr());
    expect(daemonTraced.some((l) => [...syncTraces].map(hex).includes(l.trace_id!))).toBe(true);
  }, 240_000);
});

describe('traces, OTEL_EXPORTER_OTLP_ENDPOINT unset', () => {
  it('loads no module of the SDK or the exporter, and logs no trace_id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vsi-otel-'));
    const record = join(dir, 'resolved.txt');
    // a resolve hook (module.register, Node >= 20.6) that writes down every module resolved
    const hooks = join(dir, 'hooks.mjs');
    writeFileSync(
      hooks,
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(${JSON.stringify(record)}, r.url + '\\n');
  return r;
}
`,
    );
    const register = join(dir, 'register.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
    );
    writeFileSync(record, '');
    const env = { ...h.env, LOG_LEVEL: 'debug', NODE_OPTIONS: `--import ${pathToFileURL(register).href}` };
    const r = await runCli(['backfill', '--all'], env, 90_000);
    expect(r.code, r.stderr).toBe(0);
    const resolved = readFileSync(record, 'utf8').split('\n');
    // the hook saw the program's own modules (it works) and the API package (imported statically)
    expect(resolved.some((u) => u.includes('/src/tracing.') || u.includes('/dist/tracing.'))).toBe(true);
    expect(resolved.some((u) => u.includes('@opentelemetry/api/'))).toBe(true);
    const sdk = resolved.filter((u) => /@opentelemetry\/(sdk-|exporter-|otlp-|resources|core|context-)/.test(u));
    expect(sdk).toEqual([]);
    expect(r.stderr).not.toContain('"trace_id"');
  }, 120_000);
});
