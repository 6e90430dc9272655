/**
 * Structured logs (pino) to stderr, so stdout carries only a command's output. Every call names
 * its event (`event`, from src/log-events.ts); tests, the benchmark and operators match on that
 * and the fields, never on `msg`. Secrets are redacted by configuration: any field named like a
 * key or an authorization header is censored wherever it sits, so a careless
 * `log.info({ headers })` cannot leak the API key.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'apiKey',
  'api_key',
  'API_KEY',
  'authorization',
  'password',
  '*.apiKey',
  '*.api_key',
  '*.API_KEY',
  '*.authorization',
  '*.password',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  'req.headers["x-api-key"]',
  'req.headers.authorization',
];

export interface LoggerOptions {
  level?: string;
  /** a pino destination; default stderr */
  destination?: pino.DestinationStream;
  name?: string;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      name: opts.name,
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: pino.stdSerializers.err },
    },
    opts.destination ?? pino.destination({ fd: 2, sync: true }),
  );
}

/** A logger that drops everything (tests and library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
