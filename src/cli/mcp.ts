/**
 * `mcp [--http [--port N] [--host H]]`: the corpus as tools for agents, over the Model Context
 * Protocol (src/mcp/server.ts). On stdio by default, for a client that starts the command itself:
 * stdout then carries the protocol only (logs and the search index's progress go to stderr), and
 * the command ends when the client closes stdin. With `--http`, streamable HTTP at /mcp behind
 * ADMIN_TOKEN (src/mcp/http.ts) until SIGINT/SIGTERM.
 */
import type { Command } from 'commander';
import { intArg } from './args.ts';
import { createContext } from './context.ts';
import { UsageError } from './exit.ts';

const SUMMARY =
  'serve the corpus to agents over the Model Context Protocol (stdio, or streamable HTTP behind ADMIN_TOKEN): search, read transcripts and pages, sources, recent changes';

interface McpOptions {
  http: boolean;
  port?: number;
  host?: string;
}

export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description(SUMMARY)
    .option('--http', 'serve streamable HTTP at /mcp instead of stdio; needs ADMIN_TOKEN (a bearer token)', false)
    .option('--port <n>', 'with --http: the port (0: any free one; default 8788)', intArg(0, 65_535))
    .option('--host <host>', 'with --http: the address to listen on (default 127.0.0.1)')
    .addHelpText(
      'after',
      '\nTools (read-only): search (as the search command), read_transcript (a time range), read_page (a section),\n' +
        'read_media, list_sources, recent_changes. Answers carry links: VIDEO_URL_TEMPLATE opens a video at its second.\n' +
        'An MCP client config: {"command": "videosite-ingest", "args": ["mcp"], "env": {"DATABASE_URL": "..."}}.\n' +
        'With --http the endpoint is http://HOST:PORT/mcp (stateless, JSON answers); every request needs\n' +
        '"Authorization: Bearer $ADMIN_TOKEN" and is refused (401) without it.\n',
    )
    .action(async (o: McpOptions) => {
      if (!o.http && (o.port !== undefined || o.host !== undefined))
        throw new UsageError(`--${o.port !== undefined ? 'port' : 'host'} applies to --http only`);
      const { MCP_HTTP_HOST_DEFAULT, MCP_HTTP_PORT_DEFAULT, requireToken, startMcpHttpServer } =
        await import('../mcp/http.ts');
      const ctx = createContext();
      // before any connection: no token, no HTTP server
      if (o.http) requireToken(ctx.config.admin.token);
      const { createMcpServer } = await import('../mcp/server.ts');
      const { drainSearchIndexShowingProgress } = await import('./progress.ts');
      const { VERSION } = await import('./main.ts');
      const deps = {
        sql: ctx.db().sql,
        videoUrlTemplate: ctx.config.videoUrlTemplate,
        embeddings: ctx.config.embeddings,
        drainSearchIndex: () =>
          drainSearchIndexShowingProgress(
            { sql: ctx.db().sql, passages: ctx.config.pipeline.passages },
            process.stderr,
          ),
        log: ctx.log,
        version: VERSION,
      };
      const stopped = new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      try {
        if (o.http) {
          const host = o.host ?? MCP_HTTP_HOST_DEFAULT;
          const port = o.port ?? MCP_HTTP_PORT_DEFAULT;
          let server;
          try {
            server = await startMcpHttpServer({
              host,
              port,
              token: ctx.config.admin.token,
              allowedHosts: ctx.config.admin.allowedHosts,
              newServer: () => createMcpServer(deps),
              log: ctx.log,
            });
          } catch (e: unknown) {
            const code = (e as { code?: unknown } | null)?.code;
            if (typeof code !== 'string') throw e;
            throw new UsageError(`--port ${port}: cannot listen on ${host}:${port} (${code})`);
          }
          process.stderr.write(`mcp: serving ${server.url} (bearer ADMIN_TOKEN)\n`);
          ctx.log.info({ event: 'mcp.listening', url: server.url }, 'mcp server listening');
          await stopped;
          await server.close();
        } else {
          const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
          const server = createMcpServer(deps);
          const transport = new StdioServerTransport();
          // the client closing stdin is the end of the session
          const ended = new Promise<void>((resolve) => {
            process.stdin.once('end', () => resolve());
            process.stdin.once('close', () => resolve());
          });
          await server.connect(transport);
          await Promise.race([ended, stopped]);
          await server.close();
        }
      } finally {
        await ctx.close();
      }
    });
}
