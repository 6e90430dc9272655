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

/** What an instant option (`--since`) takes, for its help and its errors. */
export const INSTANT_FORMS =
  'an ISO 8601 date such as 2024-05-01 (midnight UTC) or a date-time with its zone such as 2024-05-01T12:00:00Z or 2024-05-01T14:00:00+02:00';

/** A point in time given on the command line. */
export interface Instant {
  /** UTC, as Postgres reads it exactly: `2024-05-01T10:00:00.123456Z` (the fraction as given, at most microseconds) */
  iso: string;
  /** the same instant at millisecond precision */
  date: Date;
}

const INSTANT_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!;
}

/**
 * A calendar-valid ISO 8601 date (midnight UTC) or date-time with its zone (`Z`, `+02:00`,
 * `+0200`, `+02`), to the microsecond. A date the calendar does not have is refused, not rolled
 * over into the next month, and so is a date-time without a zone: it could mean UTC or the local
 * time of whichever machine runs the command.
 */
export function parseInstant(value: string): Instant {
  const refuse = (why: string): never => {
    throw new InvalidArgumentError(`${why}; expected ${INSTANT_FORMS}.`);
  };
  const m = INSTANT_RE.exec(value.trim());
  if (!m) return refuse('not an ISO 8601 date or date-time');
  const [, ys, mos, ds, hs, mis, ss, fraction, z, sign, ohs, oms] = m;
  const year = Number(ys);
  const month = Number(mos);
  const day = Number(ds);
  if (year < 1) refuse(`year ${ys} is not a calendar year`);
  if (month < 1 || month > 12) refuse(`month ${mos} is not a calendar month`);
  const days = daysInMonth(year, month);
  if (day < 1 || day > days) refuse(`${MONTHS[month - 1]} ${year} has no day ${ds} (it has ${days})`);
  const hour = Number(hs ?? 0);
  const minute = Number(mis ?? 0);
  const second = Number(ss ?? 0);
  if (hour > 23) refuse(`hour ${hs} is past 23`);
  if (minute > 59) refuse(`minute ${mis} is past 59`);
  if (second > 59) refuse(`second ${ss} is past 59`);
  let offsetMinutes = 0;
  if (hs !== undefined && z === undefined) {
    if (sign === undefined) refuse('a date-time needs its zone: add Z for UTC or the offset, such as +02:00');
    const oh = Number(ohs);
    const om = Number(oms ?? 0);
    if (oh > 23 || om > 59)
      refuse(`the offset ${sign}${ohs}${oms !== undefined ? `:${oms}` : ''} is not a zone offset`);
    offsetMinutes = (sign === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute - offsetMinutes, second, 0);
  const ms = d.getTime();
  const iso = `${d.toISOString().slice(0, -5)}${fraction !== undefined ? `.${fraction}` : ''}Z`;
  return { iso, date: new Date(ms + Number((fraction ?? '').padEnd(3, '0').slice(0, 3))) };
}
