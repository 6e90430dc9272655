/**
 * Structured logs (pino) to stderr, so stdout carries only a command's output. On a terminal
 * they are short human lines (pino-pretty) and a one-shot command shows only warnings and errors
 * unless LOG_LEVEL says otherwise, so its own output and progress bars are not buried; anywhere
 * else (a file, a pipe, a log shipper, the tests) they are JSON lines, one per event. Every call names
 * its event (`event`, from src/log-events.ts); tests, the benchmark and operators match on that
 * and the fields, never on `msg`. Secrets are redacted by configuration: any field named like a
 * key or an authorization header is censored wherever it sits, so a careless
 * `log.info({ headers })` cannot leak the API key.
 */
import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';
import type { Config } from './config.ts';
import { redactUrlsIn } from './url-credentials.ts';

export type { Logger };

export const REDACT_PATHS = [
  'apiKey',
  'api_key',
  'API_KEY',
  'authorization',
  'password',
  'secret',
  '*.apiKey',
  '*.api_key',
  '*.API_KEY',
  '*.authorization',
  '*.password',
  '*.secret',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  'req.headers["x-api-key"]',
  'req.headers.authorization',
];

/**
 * pino's error serializer, with the password of any URL in the message or the stack as `***`: an
 * error of a library may quote the URL it was given, credentials and all.
 */
function serializeError(e: unknown): unknown {
  const s = pino.stdSerializers.err(e as Error) as unknown;
  if (typeof s !== 'object' || s === null) return s;
  // not an Error: the serializer hands back the caller's own object, which is not changed
  const out = (s === e ? { ...s } : s) as { message?: unknown; stack?: unknown };
  if (typeof out.message === 'string') out.message = redactUrlsIn(out.message);
  if (typeof out.stack === 'string') out.stack = redactUrlsIn(out.stack);
  return out;
}

export interface LoggerOptions {
  level?: string;
  /** a pino destination; default stderr */
  destination?: pino.DestinationStream;
  name?: string;
  /** human lines (pino-pretty) to stderr instead of JSON; ignored with `destination` */
  pretty?: boolean;
}

/** Fields a human line leaves out: the process, and what the message already says. */
const PRETTY_IGNORE = 'pid,hostname,name';

/**
 * pino-pretty as a synchronous stream to stderr, loaded at the first line written: a one-shot
 * command on a terminal logs warnings only, mostly none, and starts without it (JSON needs none
 * of it at all).
 */
function prettyStderr(): pino.DestinationStream {
  let stream: pino.DestinationStream | undefined;
  return {
    write(line: string) {
      // pino-pretty is CommonJS; required synchronously so a line is written before the call returns
      stream ??= (
        createRequire(import.meta.url)('pino-pretty') as (o: Record<string, unknown>) => pino.DestinationStream
      )({
        destination: 2,
        sync: true,
        colorize: process.stderr.isTTY === true,
        translateTime: 'SYS:HH:MM:ss',
        ignore: PRETTY_IGNORE,
        singleLine: true,
      });
      stream.write(line);
    },
  };
}

/**
 * Fields added to every line of the loggers created from now on (src/tracing.ts sets the trace's
 * when tracing starts): this module does not import the tracing API, which a command without
 * tracing and without a traced step (`status`) never loads.
 */
let lineFields: (() => Record<string, unknown>) | undefined;

export function setLogLineFields(fields: (() => Record<string, unknown>) | undefined): void {
  lineFields = fields;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      name: opts.name,
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError },
      // the trace and span of the line (OTEL_EXPORTER_OTLP_ENDPOINT set: src/tracing.ts)
      ...(lineFields ? { mixin: lineFields } : {}),
    },
    opts.destination ?? (opts.pretty ? prettyStderr() : pino.destination({ fd: 2, sync: true })),
  );
}

/**
 * How a command logs, from LOG_FORMAT and LOG_LEVEL: human lines on a terminal (`auto`), and
 * there, for a one-shot command (everything but the daemon and the simulator), warnings and
 * errors only unless LOG_LEVEL is set: the command prints its own result.
 */
export function loggingFor(
  config: Pick<Config, 'logLevel' | 'logLevelSet' | 'logFormat'>,
  o: { longRunning: boolean; isTTY?: boolean },
): { level: string; pretty: boolean } {
  const pretty =
    config.logFormat === 'pretty' || (config.logFormat === 'auto' && (o.isTTY ?? process.stderr.isTTY === true));
  const level = config.logLevelSet || !pretty || o.longRunning ? config.logLevel : 'warn';
  return { level, pretty };
}

/** A logger that drops everything (tests and library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
