/**
 * What a source's `--cron` may be. cron-parser alone accepts too much for a schedule that costs a
 * listing credit per tick: `0 3 * *` (four fields) parsed and fired on the 3rd of each month,
 * `*\/5` alone parsed, and six fields fire every second. So a source's cron is checked here
 * first: exactly five fields, each token in its field's range, then how often it fires.
 */
import { CronExpressionParser } from 'cron-parser';

interface CronField {
  name: string;
  min: number;
  max: number;
  /** names accepted for values (three letters, any case) */
  names?: readonly string[];
  example: string;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] as const;
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

export const CRON_FIELDS: readonly CronField[] = [
  { name: 'minute', min: 0, max: 59, example: '0, */15, 5,35' },
  { name: 'hour', min: 0, max: 23, example: '3, */6, 9-17' },
  { name: 'day of month', min: 1, max: 31, example: '1, 1,15, *' },
  { name: 'month', min: 1, max: 12, names: MONTHS, example: '*, 1-6, jan' },
  // 7 is Sunday too, as in Vixie cron
  { name: 'day of week', min: 0, max: 7, names: DAYS, example: '*, 1-5, mon-fri' },
];

export const CRON_FORMAT =
  'five fields: minute hour day-of-month month day-of-week, e.g. "0 3 * * *" (03:00 UTC daily)';

/**
 * How far ahead the interval check looks: this many fires or this long, whichever ends first
 * (a pattern repeats within a day, or a week with a day-of-week field; cron-parser takes about
 * 0.2 ms a fire, so 400 of them are imperceptible on `sources add`).
 */
const INTERVAL_CHECK_FIRES = 400;
const INTERVAL_CHECK_SPAN_MS = 8 * 24 * 3_600_000;

export class CronError extends Error {
  override name = 'CronError';
}

function valueOf(token: string, f: CronField, position: number): number {
  const lower = token.toLowerCase();
  const named = f.names?.indexOf(lower as never) ?? -1;
  if (named >= 0) return named + (f.name === 'month' ? 1 : 0);
  if (!/^\d+$/.test(token)) {
    throw new CronError(
      `field ${position} (${f.name}) has "${token}", which is not a number${f.names ? ' or a name such as ' + f.names[1] : ''}`,
    );
  }
  const n = Number(token);
  if (n < f.min || n > f.max)
    throw new CronError(`field ${position} (${f.name}) has ${n}, out of its range ${f.min}-${f.max}`);
  return n;
}

function checkField(text: string, f: CronField, position: number): void {
  for (const part of text.split(',')) {
    if (part === '') throw new CronError(`field ${position} (${f.name}) "${text}" has an empty list item`);
    const [range, step, extra] = part.split('/');
    if (extra !== undefined) throw new CronError(`field ${position} (${f.name}) "${part}" has two steps`);
    if (step !== undefined && (!/^\d+$/.test(step) || Number(step) < 1 || Number(step) > f.max - f.min + 1)) {
      throw new CronError(
        `field ${position} (${f.name}) "${part}": the step "${step}" must be a number from 1 to ${f.max - f.min + 1}`,
      );
    }
    if (range === '*') continue;
    const bounds = range!.split('-');
    if (bounds.length > 2) throw new CronError(`field ${position} (${f.name}) "${part}" is not a value or a range a-b`);
    const lo = valueOf(bounds[0]!, f, position);
    if (bounds.length === 2) {
      const hi = valueOf(bounds[1]!, f, position);
      if (hi < lo) throw new CronError(`field ${position} (${f.name}) "${part}" runs backwards (${lo} > ${hi})`);
    }
  }
}

/**
 * Checks the syntax alone: five fields, each token in range. Throws a CronError that names the
 * field, the value and what would be valid.
 */
export function checkCronSyntax(expr: string): void {
  const fields = expr
    .trim()
    .split(/\s+/)
    .filter((s) => s !== '');
  if (fields.length !== 5) {
    throw new CronError(`has ${fields.length} field${fields.length === 1 ? '' : 's'}; expected ${CRON_FORMAT}`);
  }
  fields.forEach((text, i) => {
    const f = CRON_FIELDS[i]!;
    try {
      checkField(text, f, i + 1);
    } catch (e: unknown) {
      if (e instanceof CronError) throw new CronError(`${e.message} (valid: ${f.example})`);
      throw e;
    }
  });
  try {
    CronExpressionParser.parse(expr, { tz: 'UTC' });
  } catch (e: unknown) {
    throw new CronError(`${e instanceof Error ? e.message : 'invalid'}; expected ${CRON_FORMAT}`);
  }
}

export interface CronPlan {
  /** the next fire times after `from`, UTC */
  next: Date[];
  /** the shortest time between two consecutive fires seen, ms (null: it fires at most once a year or so) */
  minIntervalMs: number | null;
}

/** The next `count` fires and the shortest interval between fires, from `from`. */
export function planCron(expr: string, from: Date, count = 3): CronPlan {
  const it = CronExpressionParser.parse(expr, { tz: 'UTC', currentDate: from });
  const next: Date[] = [];
  let prev: number | undefined;
  let minIntervalMs: number | null = null;
  for (let i = 0; i < INTERVAL_CHECK_FIRES && it.hasNext(); i++) {
    const t = it.next().getTime();
    if (next.length >= count && t - from.getTime() > INTERVAL_CHECK_SPAN_MS) break;
    if (next.length < count) next.push(new Date(t));
    if (prev !== undefined) minIntervalMs = Math.min(minIntervalMs ?? Infinity, t - prev);
    prev = t;
  }
  return { next, minIntervalMs };
}

/**
 * A source's cron as `sources add` and `sources edit` accept it: valid syntax, and never two fires
 * closer than `minIntervalMs` (each fire lists the source, at a credit per page).
 */
export function checkSourceCron(expr: string, minIntervalMs: number, from: Date): CronPlan {
  checkCronSyntax(expr);
  const plan = planCron(expr, from);
  if (plan.minIntervalMs !== null && plan.minIntervalMs < minIntervalMs) {
    throw new CronError(
      `fires every ${formatInterval(plan.minIntervalMs)} at its closest, more often than SOURCE_MIN_INTERVAL_MS allows ` +
        `(${formatInterval(minIntervalMs)}): each fire lists the source, which costs a credit per page; ` +
        `e.g. "${suggestCron(minIntervalMs)}"`,
    );
  }
  return plan;
}

/** A regular cron no more frequent than `minIntervalMs` (steps that divide the hour or the day, so every gap is equal). */
export function suggestCron(minIntervalMs: number): string {
  const minutes = Math.max(1, Math.ceil(minIntervalMs / 60_000));
  const everyMinutes = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30].find((d) => d >= minutes);
  if (everyMinutes !== undefined) return everyMinutes === 1 ? '* * * * *' : `*/${everyMinutes} * * * *`;
  const hours = Math.ceil(minutes / 60);
  const everyHours = [1, 2, 3, 4, 6, 8, 12].find((d) => d >= hours);
  if (everyHours !== undefined) return everyHours === 1 ? '0 * * * *' : `0 */${everyHours} * * *`;
  return '0 3 * * *';
}

function formatInterval(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

/**
 * The time between the two latest fires of a cron expression at or before `at`, ms: the interval a
 * source on it is expected to be synced within (undefined for an expression that does not parse).
 */
export function cronIntervalMs(expr: string, at: Date): number | undefined {
  try {
    const it = CronExpressionParser.parse(expr, { tz: 'UTC', currentDate: at });
    const last = it.prev().getTime();
    return last - it.prev().getTime();
  } catch {
    return undefined;
  }
}
