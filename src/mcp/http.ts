/**
 * The MCP server over streamable HTTP (`mcp --http`), stateless: every POST to /mcp gets a server
 * and transport of its own (the SDK's stateless mode; no session to keep, so any number of
 * processes can serve behind a balancer) and a JSON answer. Every request needs ADMIN_TOKEN as a
 * bearer token (src/admin/auth.ts compares it in constant time); without one the command does
 * not start. GET and DELETE (a stream, a session's end) have nothing to serve without sessions.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { tokenMatches } from '../admin/auth.ts';
import { allowedHostNames, refuseForeignHost } from '../admin/request-guard.ts';
import { ConfigError } from '../config.ts';
import { listenHttp } from '../http-listen.ts';
import type { Logger } from '../log.ts';

/** Where the MCP endpoint is served. */
export const MCP_HTTP_PATH = '/mcp';
/** `--port` when not given. */
export const MCP_HTTP_PORT_DEFAULT = 8788;
/** `--host` when not given: this machine only. */
export const MCP_HTTP_HOST_DEFAULT = '127.0.0.1';
/** The largest request body accepted, bytes: a tool call's arguments are a few hundred. */
export const MCP_HTTP_BODY_MAX_BYTES = 1_048_576;
/** How long closing waits for requests in flight before cutting them, ms. */
const MCP_HTTP_CLOSE_TIMEOUT_MS = 5_000;

const REALM = 'videosite-ingest mcp';

export interface McpHttpOptions {
  /** ADMIN_TOKEN; required */
  token: string | undefined;
  /** ADMIN_ALLOWED_HOSTS: names besides localhost and IP addresses a request's Host may carry */
  allowedHosts?: readonly string[];
  /** a server with every tool registered, new for each request */
  newServer(): McpServer;
  log: Logger;
}

/** The app: /mcp behind the bearer token, nothing else. */
export function createMcpHttpApp(opts: McpHttpOptions): Hono {
  const token = requireToken(opts.token);
  const app = new Hono();
  // as on the admin server: a rebound DNS name (a hostile page reaching 127.0.0.1) is refused
  // before the token is looked at, and a request body is bounded
  app.use('*', refuseForeignHost(allowedHostNames(opts.allowedHosts ?? []), opts.log));
  app.use('*', async (c, next) => {
    if (tokenMatches(c.req.header('authorization'), token, ['bearer'])) return next();
    c.header('WWW-Authenticate', `Bearer realm="${REALM}"`);
    c.header('Cache-Control', 'no-store');
    return c.text('authentication required: send ADMIN_TOKEN as a bearer token\n', 401);
  });
  app.use(
    '*',
    bodyLimit({
      maxSize: MCP_HTTP_BODY_MAX_BYTES,
      onError: (c) => c.text(`request body too large: at most ${MCP_HTTP_BODY_MAX_BYTES} bytes\n`, 413),
    }),
  );
  app.post(MCP_HTTP_PATH, async (c) => {
    const server = opts.newServer();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      // with JSON answers the response is complete when this resolves
      return await transport.handleRequest(c.req.raw);
    } finally {
      await server.close();
    }
  });
  app.on(['GET', 'DELETE'], MCP_HTTP_PATH, (c) =>
    c.json(
      {
        jsonrpc: '2.0',
        error: { code: -32000, message: 'method not allowed: a stateless server (POST only)' },
        id: null,
      },
      405,
      {
        Allow: 'POST',
      },
    ),
  );
  return app;
}

/** The token, or the ConfigError naming ADMIN_TOKEN (exit 2, before anything listens). */
export function requireToken(token: string | undefined): string {
  if (token === undefined)
    throw new ConfigError(
      'ADMIN_TOKEN',
      'not set, but mcp --http serves the corpus only to callers presenting it as a bearer token; set ADMIN_TOKEN (at least 16 characters), or run mcp without --http (stdio)',
    );
  return token;
}

export interface McpHttpServer {
  /** e.g. http://127.0.0.1:8788/mcp */
  url: string;
  close(): Promise<void>;
}

export async function startMcpHttpServer(
  opts: McpHttpOptions & { host: string; port: number },
): Promise<McpHttpServer> {
  // the name it listens on is one of its names (an address is accepted anyway)
  const app = createMcpHttpApp({ ...opts, allowedHosts: [...(opts.allowedHosts ?? []), opts.host] });
  const server = await listenHttp(app.fetch, {
    host: opts.host,
    port: opts.port,
    closeTimeoutMs: MCP_HTTP_CLOSE_TIMEOUT_MS,
    onError: (e) => opts.log.error({ event: 'mcp.server_error', err: { message: e.message } }, 'mcp server error'),
  });
  return { url: `${server.url}${MCP_HTTP_PATH}`, close: server.close };
}
