import { describe, expect, it } from 'vitest';
import { checkCronSyntax, checkSourceCron, CronError, planCron, suggestCron } from '../../src/domain/cron.ts';

const FIVE_MIN = 5 * 60_000;
const from = new Date('2026-11-23T10:07:30Z');

describe('a source cron', () => {
  it('accepts five valid fields, names and steps included', () => {
    for (const ok of [
      '0 3 * * *',
      '*/5 * * * *',
      '5,35 9-17 * * mon-fri',
      '0 0 1 jan,jul *',
      '0 12 * * 7',
      '15 */6 1-15/2 * *',
    ]) {
      expect(() => checkCronSyntax(ok), ok).not.toThrow();
    }
  });

  it.each([
    ['0 3 * *', /has 4 fields; expected five fields/],
    ['*/5', /has 1 field; expected five fields/],
    ['*/10 * * * * *', /has 6 fields/],
    ['0 25 * * *', /field 2 \(hour\) has 25, out of its range 0-23 \(valid: 3, \*\/6, 9-17\)/],
    ['60 * * * *', /field 1 \(minute\) has 60, out of its range 0-59/],
    ['0 3 0 * *', /field 3 \(day of month\) has 0, out of its range 1-31/],
    ['0 3 * 13 *', /field 4 \(month\) has 13/],
    ['0 3 * * 8', /field 5 \(day of week\) has 8, out of its range 0-7/],
    ['0 3 * * funday', /field 5 \(day of week\) has "funday", which is not a number or a name such as mon/],
    ['*/0 * * * *', /the step "0" must be a number from 1 to 60/],
    ['0 17-9 * * *', /runs backwards \(17 > 9\)/],
    ['0 3,,4 * * *', /empty list item/],
  ])('refuses %j naming the field and what would be valid', (expr, message) => {
    expect(() => checkCronSyntax(expr)).toThrow(CronError);
    expect(() => checkCronSyntax(expr)).toThrow(message);
  });

  it('gives the next three fires in UTC and the shortest interval', () => {
    const p = planCron('0 3 * * *', from);
    expect(p.next.map((d) => d.toISOString())).toEqual([
      '2026-11-24T03:00:00.000Z',
      '2026-11-25T03:00:00.000Z',
      '2026-11-26T03:00:00.000Z',
    ]);
    expect(p.minIntervalMs).toBe(24 * 3_600_000);
    // uneven steps: the closest two fires decide (56 -> 0 is 4 minutes)
    expect(planCron('*/7 * * * *', from).minIntervalMs).toBe(4 * 60_000);
    expect(planCron('0,1 3 * * *', from).minIntervalMs).toBe(60_000);
  });

  it('refuses a schedule firing more often than the minimum interval, with a regular one to use instead', () => {
    expect(() => checkSourceCron('* * * * *', FIVE_MIN, from)).toThrow(
      /fires every 1 min at its closest, more often than SOURCE_MIN_INTERVAL_MS allows \(5 min\).*e\.g\. "\*\/5 \* \* \* \*"/,
    );
    expect(() => checkSourceCron('*/7 * * * *', FIVE_MIN, from)).toThrow(/fires every 4 min/);
    expect(() => checkSourceCron('0,1 3 * * *', FIVE_MIN, from)).toThrow(CronError);
    expect(checkSourceCron('*/5 * * * *', FIVE_MIN, from).next[0]!.toISOString()).toBe('2026-11-23T10:10:00.000Z');
    expect(checkSourceCron('* * * * *', 0, from).minIntervalMs).toBe(60_000);
  });

  it('suggests steps that divide the hour or the day', () => {
    expect(suggestCron(FIVE_MIN)).toBe('*/5 * * * *');
    expect(suggestCron(7 * 60_000)).toBe('*/10 * * * *');
    expect(suggestCron(45 * 60_000)).toBe('0 * * * *');
    expect(suggestCron(5 * 3_600_000)).toBe('0 */6 * * *');
    expect(suggestCron(13 * 3_600_000)).toBe('0 3 * * *');
    for (const ms of [60_000, FIVE_MIN, 7 * 60_000, 45 * 60_000, 5 * 3_600_000]) {
      expect(planCron(suggestCron(ms), from).minIntervalMs).toBeGreaterThanOrEqual(ms);
    }
  });
});
