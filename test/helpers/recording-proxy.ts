/**
 * A recording HTTP proxy for contract tests: it forwards every request to one upstream origin
 * over real HTTP and records each exchange as it crossed the wire, so a test can hold what was
 * really sent and answered (not what a client or server thinks it did) to a published document.
 *
 * The request keeps its Host header, so URLs the upstream builds from it (a crawl's `next`) point
 * back through the proxy. Bodies are held in memory whole: for test-sized traffic only.
 */
import { Agent, createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { Socket } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** the path as sent, percent-encoded, without the query */
  path: string;
  /** every value of every query key, in order: a repeated key (`features=a&features=b`) keeps them all */
  query: Record<string, string[]>;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface RecordedAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Exchange {
  /** 0 for the first request the proxy saw */
  seq: number;
  request: RecordedRequest;
  /** undefined when the upstream gave no answer (`error` says why) */
  answer: RecordedAnswer | undefined;
  error?: string;
}

export interface RecordingProxy {
  /** `http://127.0.0.1:PORT`: use it where the upstream's origin would go */
  url: string;
  /** every finished exchange, in the order the requests arrived */
  exchanges(): Exchange[];
  close(): Promise<void>;
}

/** Headers of one connection, not of the message: not forwarded. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade']);

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
  return out;
}

function multiMap(params: URLSearchParams): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of params) (out[k] ??= []).push(v);
  return out;
}

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true });
  const done: Exchange[] = [];
  const sockets = new Set<Socket>();
  let seq = 0;

  const server: Server = createServer((req, res) => {
    const mine = seq++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://proxy.invalid');
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path: u.pathname,
        query: multiMap(u.searchParams),
        headers: { ...req.headers },
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const fail = (why: string) => {
        done.push({ seq: mine, request: recorded, answer: undefined, error: why });
        res.socket?.destroy();
      };
      const up = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: recorded.method,
          path: req.url,
          headers: forwardable(req.headers),
          agent,
        },
        (upRes) => {
          const answerChunks: Buffer[] = [];
          res.writeHead(upRes.statusCode ?? 502, forwardable(upRes.headers));
          upRes.on('data', (c: Buffer) => {
            answerChunks.push(c);
            res.write(c);
          });
          upRes.on('end', () => {
            // recorded before the client sees the end, so a test reading the record after its
            // call returned always finds the whole exchange
            done.push({
              seq: mine,
              request: recorded,
              answer: {
                status: upRes.statusCode ?? 0,
                headers: { ...upRes.headers },
                body: Buffer.concat(answerChunks).toString('utf8'),
              },
            });
            res.end();
          });
          upRes.on('error', (e) => fail(`answer broke off: ${e.message}`));
        },
      );
      up.on('error', (e) => fail(`upstream failed: ${e.message}`));
      up.end(Buffer.concat(chunks));
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('recording proxy: unexpected server address');

  return {
    url: `http://127.0.0.1:${addr.port}`,
    exchanges: () => [...done].sort((a, b) => a.seq - b.seq),
    close: () =>
      new Promise<void>((resolve) => {
        agent.destroy();
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
