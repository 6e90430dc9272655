/**
 * A local HTTP server whose answers are scripted per request, to shape what the upstream does
 * on each attempt (stripe-node `test/testUtils.ts` style: reset, then 500, then 200). It records
 * every request it sees, so a test can count attempts and inspect headers.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type ScriptedAnswer =
  /** a normal answer; an object body is sent as JSON, a string as is */
  | { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number }
  /** destroy the connection as soon as the request arrives (after it was sent) */
  | { reset: true }
  /** never answer (until the client gives up or the server closes) */
  | { hang: true }
  /** send the head and a part of the body, then close the connection mid-body */
  | { truncate: { status: number; partial: string; declaredLength?: number; headers?: Record<string, string> } }
  /** send the head and a part of the body, then go silent */
  | { stall: { status: number; partial: string; headers?: Record<string, string> } }
  /**
   * a long body sent chunked (no content-length), `prefix`, then `fillBytes` of `x`, then
   * `suffix`, written as fast as the client reads it and no faster; what was written is recorded
   * in `floods` once the response ends or the client goes away
   */
  | {
      flood: { status: number; prefix?: string; fillBytes: number; suffix?: string; headers?: Record<string, string> };
    };

/** What the server wrote of a `flood` answer. */
export interface FloodRecord {
  method: string;
  path: string;
  /** bytes handed to the connection (some may still have sat in buffers when it closed) */
  written: number;
  /** bytes the whole body has */
  total: number;
  /** the whole body was written and the response ended */
  complete: boolean;
}

export interface RecordedRequest {
  method: string;
  /** path below the `/v1` base, without the query */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface ScriptedServer {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  port: number;
  /** every request seen, in order */
  requests: RecordedRequest[];
  /** every `flood` answer, once it ended or its client went away */
  floods: FloodRecord[];
  /** queue answers for `METHOD /path` (path below `/v1`); each request takes the next one */
  script(method: string, path: string, ...answers: ScriptedAnswer[]): void;
  /** requests seen for `METHOD /path` */
  count(method: string, path: string): number;
  /** scripted answers not yet taken, as `METHOD /path` per answer */
  pending(): string[];
  /** forget the script and the recorded requests (between tests) */
  reset(): void;
  close(): Promise<void>;
}

export const BASE_PATH = '/v1';

/** A port that was free a moment ago (for connection-refused tests). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  const type = typeof body === 'string' ? 'text/plain' : 'application/json';
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export async function startScriptedServer(opts: { port?: number } = {}): Promise<ScriptedServer> {
  const queues = new Map<string, ScriptedAnswer[]>();
  const requests: RecordedRequest[] = [];
  const floods: FloodRecord[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://local');
      const path = url.pathname.startsWith(BASE_PATH) ? url.pathname.slice(BASE_PATH.length) : url.pathname;
      const method = req.method ?? 'GET';
      requests.push({
        method,
        path,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      const answer = queues.get(`${method} ${path}`)?.shift();
      if (answer === undefined) {
        send(res, 404, { error: 'not-found', message: `unscripted: ${method} ${path}`, details: 'scripted server' });
        return;
      }
      if ('reset' in answer) {
        req.socket.destroy();
        return;
      }
      if ('hang' in answer) return;
      if ('truncate' in answer) {
        const t = answer.truncate;
        res.writeHead(t.status, {
          'content-type': 'application/json',
          'content-length': t.declaredLength ?? Buffer.byteLength(t.partial) + 100,
          ...t.headers,
        });
        res.write(t.partial, () => {
          const timer = setTimeout(() => req.socket.destroy(), 20);
          timers.add(timer);
        });
        return;
      }
      if ('stall' in answer) {
        const t = answer.stall;
        res.writeHead(t.status, { 'content-type': 'application/json', ...t.headers });
        res.write(t.partial);
        return;
      }
      if ('flood' in answer) {
        flood(res, method, path, answer.flood);
        return;
      }
      if (answer.delayMs !== undefined) {
        const timer = setTimeout(() => send(res, answer.status, answer.body, answer.headers), answer.delayMs);
        timers.add(timer);
        return;
      }
      send(res, answer.status, answer.body, answer.headers);
    });
  });
  function flood(
    res: ServerResponse,
    method: string,
    path: string,
    f: { status: number; prefix?: string; fillBytes: number; suffix?: string; headers?: Record<string, string> },
  ): void {
    const head = Buffer.from(f.prefix ?? '');
    const tail = Buffer.from(f.suffix ?? '');
    const filler = Buffer.alloc(64 * 1024, 'x');
    const total = head.length + f.fillBytes + tail.length;
    let written = 0;
    let filled = 0;
    let recorded = false;
    const record = (complete: boolean): void => {
      if (recorded) return;
      recorded = true;
      floods.push({ method, path, written, total, complete });
    };
    res.on('close', () => record(res.writableFinished));
    res.writeHead(f.status, { 'content-type': 'application/json', ...f.headers });
    res.write(head);
    written += head.length;
    const pump = (): void => {
      while (filled < f.fillBytes) {
        if (res.destroyed) return;
        const n = Math.min(filler.length, f.fillBytes - filled);
        filled += n;
        written += n;
        if (!res.write(filler.subarray(0, n))) {
          res.once('drain', pump);
          return;
        }
      }
      written += tail.length;
      res.end(tail);
    };
    pump();
  }

  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}${BASE_PATH}`,
    port,
    requests,
    floods,
    script(method, path, ...answers) {
      const key = `${method} ${path}`;
      queues.set(key, [...(queues.get(key) ?? []), ...answers]);
    },
    count(method, path) {
      return requests.filter((r) => r.method === method && r.path === path).length;
    },
    pending() {
      return [...queues].flatMap(([key, q]) => q.map(() => key));
    },
    reset() {
      queues.clear();
      requests.length = 0;
      floods.length = 0;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
