/**
 * Listening and closing, alike for the HTTP servers this package runs (the admin pages, `mcp
 * --http`): a port that cannot be bound rejects with the socket error (`code` EADDRINUSE, ...)
 * before anything is served, and closing waits for requests in flight up to a bound, then cuts them.
 */
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';

export interface ListeningHttpServer {
  /** `http://host:port` (a wildcard host is shown as 127.0.0.1, an IPv6 one in brackets) */
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function listenHttp(
  fetch: (request: Request) => Response | Promise<Response>,
  opts: {
    host: string;
    port: number;
    /** how long close() waits for requests in flight before cutting them, ms */
    closeTimeoutMs: number;
    /** an error of the listening socket after start */
    onError(e: Error): void;
  },
): Promise<ListeningHttpServer> {
  const server = createAdaptorServer({ fetch, hostname: opts.host });
  await new Promise<void>((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    server.listen(opts.port, opts.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', opts.onError);
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${shownHost(opts.host)}:${port}`,
    port,
    async close() {
      let timer: NodeJS.Timeout | undefined;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if ('closeIdleConnections' in server) server.closeIdleConnections();
      await Promise.race([
        closed,
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            if ('closeAllConnections' in server) server.closeAllConnections();
            resolve();
          }, opts.closeTimeoutMs);
        }),
      ]);
      if (timer) clearTimeout(timer);
    },
  };
}

/** How a URL names the host a server listens on: a wildcard as 127.0.0.1, IPv6 in brackets. */
function shownHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
