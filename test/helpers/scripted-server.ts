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
  | { stall: { status: number; partial: string; headers?: Record<string, string> } };

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
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://local');
      const path = url.pathname.startsWith(BASE_PATH) ? url.pathname.slice(BASE_PATH.length) : url.pathname;
      const method = req.method ?? 'GET';
      requests.push({ method, path, query: url.searchParams, headers: req.headers, body: Buffer.concat(chunks).toString() });
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
      if (answer.delayMs !== undefined) {
        const timer = setTimeout(() => send(res, answer.status, answer.body, answer.headers), answer.delayMs);
        timers.add(timer);
        return;
      }
      send(res, answer.status, answer.body, answer.headers);
    });
  });
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
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
