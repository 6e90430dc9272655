/**
 * `videosite-ingest embeddings-twin`: run the offline OpenAI-compatible embeddings server
 * (src/embeddings/twin.ts) until SIGINT/SIGTERM, for the demo, the benchmark and trying
 * EMBEDDINGS_* without a provider. stdout gets one line saying where it listens.
 */
import type { Command } from 'commander';
import { loadConfig } from '../config.ts';
import { createLogger, loggingFor } from '../log.ts';
import {
  DEFAULT_TWIN_HOST,
  DEFAULT_TWIN_PORT,
  startEmbeddingsTwin,
  TWIN_DEFAULT_DIMENSIONS,
  type EmbeddingsTwinOptions,
} from '../embeddings/twin.ts';
import { intArg, numberArg } from './args.ts';
import { serveUntilSignal } from './serve-until-signal.ts';

interface TwinFlags {
  port: number;
  host: string;
  dimensions?: number;
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  latencyMs?: number;
}

export function registerEmbeddingsTwinCommand(program: Command): void {
  program
    .command('embeddings-twin')
    .summary('run the offline OpenAI-compatible embeddings server (deterministic vectors, rate limits, faults)')
    .description(
      'Run a small OpenAI-compatible embeddings server (POST /v1/embeddings) for tests, the demo and ' +
        'trying EMBEDDINGS_* offline: deterministic vectors that place synonyms together, tokens counted ' +
        'in cl100k_base, an optional rate limit (429 with Retry-After), no key unless EMBEDDINGS_API_KEY ' +
        'is set. Point EMBEDDINGS_BASE_URL at the printed URL. Its admin API (no key) lives under ' +
        '/__admin/: stats (GET), script {steps}, down {ms}, rate-limit {requestsPerMinute, tokensPerMinute}, reset.',
    )
    .option('--port <n>', 'port to listen on (0 = any free port)', intArg(0, 65_535), DEFAULT_TWIN_PORT)
    .option('--host <host>', 'interface to listen on', DEFAULT_TWIN_HOST)
    .option(
      '--dimensions <n>',
      `dimensions of a vector when a request names none (default ${TWIN_DEFAULT_DIMENSIONS})`,
      intArg(1, 4096),
    )
    .option('--requests-per-minute <n>', 'requests allowed per minute (default: no limit)', numberArg(0.001, 1e9))
    .option('--tokens-per-minute <n>', 'tokens allowed per minute (default: no limit)', numberArg(0.001, 1e12))
    .option('--latency-ms <n>', 'delay before every answer, ms (default 0)', intArg(0, 600_000))
    .action(async (flags: TwinFlags) => {
      const config = loadConfig();
      const log = createLogger({ ...loggingFor(config, { longRunning: true }), name: 'embeddings-twin' });
      await serveUntilSignal(
        async () => {
          const opts: EmbeddingsTwinOptions = {
            port: flags.port,
            host: flags.host,
            apiKey: config.embeddings?.apiKey,
            rateLimit: { requestsPerMinute: flags.requestsPerMinute, tokensPerMinute: flags.tokensPerMinute },
            logger: log,
          };
          if (flags.dimensions !== undefined) opts.defaultDimensions = flags.dimensions;
          if (flags.latencyMs !== undefined) opts.latencyMs = flags.latencyMs;
          const twin = await startEmbeddingsTwin(opts);
          process.stdout.write(`embeddings twin listening on ${twin.baseUrl}\n`);
          return twin;
        },
        (signal) => log.info({ event: 'embeddings_twin.stopping', signal }, 'embeddings twin stopping'),
      );
    });
}
