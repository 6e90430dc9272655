/**
 * Argument parsers for commander options: each names the option, the value and what is valid,
 * so `--port abc` fails before any work starts.
 */
import { InvalidArgumentError } from 'commander';

export function intArg(min: number, max: number): (value: string) => number {
  return (value: string) => {
    if (!/^-?\d+$/.test(value.trim())) {
      throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}.`);
    }
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}.`);
    return n;
  };
}

export function numberArg(min: number, max: number): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
      throw new InvalidArgumentError(`expected a number from ${min} to ${max}.`);
    }
    return n;
  };
}

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `15m`, `2h`, `1d`, `500ms`, or a bare number of seconds. */
export function parseDurationMs(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('expected a duration such as 90s, 15m, 2h or 1d.');
  const ms = Number(m[1]) * DURATION_UNITS_MS[m[2] ?? 's']!;
  if (ms <= 0) throw new InvalidArgumentError('expected a duration greater than zero.');
  return Math.round(ms);
}

/** A duration the way `parseDurationMs` reads it back: `7d`, `36h`, `90m`, `45s`, `500ms`. */
export function formatDurationMs(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = DURATION_UNITS_MS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** A duration of at least `minMs` (`minText` says it the way a person writes it). */
export function durationArg(minMs: number, minText: string): (value: string) => number {
  return (value) => {
    const ms = parseDurationMs(value);
    if (ms < minMs) throw new InvalidArgumentError(`${value} is shorter than the minimum, ${minText}.`);
    return ms;
  };
}
