/**
 * The one date/time parser of `--since` (issue #27): calendar-valid ISO 8601 dates and date-times
 * with their zone, to the microsecond; anything else refused naming what is wrong and the forms.
 */
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseInstant } from '../../src/cli/args.ts';

describe('parseInstant', () => {
  const iso = (v: string) => parseInstant(v).iso;
  const refused = (v: string): string => {
    try {
      parseInstant(v);
    } catch (e: unknown) {
      expect(e).toBeInstanceOf(InvalidArgumentError);
      return (e as Error).message;
    }
    throw new Error(`${v} was accepted`);
  };

  it('reads a date as midnight UTC and a date-time in its zone, microseconds kept', () => {
    expect(iso('2024-02-29')).toBe('2024-02-29T00:00:00Z');
    expect(iso('2024-05-01T12:00Z')).toBe('2024-05-01T12:00:00Z');
    expect(iso('2024-05-01T12:00:00.123456Z')).toBe('2024-05-01T12:00:00.123456Z');
    expect(iso('2024-05-01 14:00:00+02:00')).toBe('2024-05-01T12:00:00Z');
    expect(iso('2024-05-01T01:30:00-0230')).toBe('2024-05-01T04:00:00Z');
    expect(iso('2024-01-01T01:00:00+02')).toBe('2023-12-31T23:00:00Z');
    expect(parseInstant('2024-05-01T12:00:00.5Z').date.toISOString()).toBe('2024-05-01T12:00:00.500Z');
    expect(iso('2000-02-29')).toBe('2000-02-29T00:00:00Z');
  });

  it('refuses what the calendar does not have, naming what is wrong and the accepted forms', () => {
    expect(refused('2024-02-30')).toMatch(/February 2024 has no day 30 \(it has 29\).*2024-05-01T12:00:00Z/);
    expect(refused('2023-02-29')).toMatch(/February 2023 has no day 29/);
    expect(refused('1900-02-29')).toMatch(/February 1900 has no day 29/);
    expect(refused('2024-04-31')).toMatch(/April 2024 has no day 31/);
    expect(refused('2024-13-01')).toMatch(/month 13/);
    expect(refused('2024-00-10')).toMatch(/month 00/);
    expect(refused('2024-05-00')).toMatch(/no day 00/);
    expect(refused('2024-05-01T24:00:00Z')).toMatch(/hour 24/);
    expect(refused('2024-05-01T12:60:00Z')).toMatch(/minute 60/);
    expect(refused('2024-05-01T12:00:60Z')).toMatch(/second 60/);
    expect(refused('2024-05-01T12:00:00+25:00')).toMatch(/offset/);
    expect(refused('2024-05-01T12:00:00')).toMatch(/zone/);
    for (const v of [
      'yesterday',
      '2024-5-1',
      '01/05/2024',
      '2024-05-01T12',
      '2024-05-01Z',
      '',
      '2024-05-01T12:00:00.1234567Z',
    ]) {
      expect(refused(v)).toMatch(/ISO 8601/);
    }
  });
});
