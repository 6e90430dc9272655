import { describe, expect, it } from 'vitest';
import { loadConfig, MIGRATION_LOCK_RETRIES, MIGRATION_LOCK_TIMEOUT_MS } from '../../src/config.ts';
import { configErrorOf } from '../helpers/config.ts';
import { isMarkedBackwardCompatible, judgeSchema, schemaStopReason } from '../../src/domain/schema-compat.ts';

describe('schema compatibility', () => {
  it('a migration is compatible only with the mark alone on a line', () => {
    expect(isMarkedBackwardCompatible('-- vsi: backward-compatible\nCREATE TABLE x (id int);')).toBe(true);
    expect(isMarkedBackwardCompatible('CREATE TABLE x (id int);\r\n  -- vsi: backward-compatible  \r\n')).toBe(true);
    expect(isMarkedBackwardCompatible('-- vsi: backward-compatible? no\nCREATE TABLE x (id int);')).toBe(false);
    expect(isMarkedBackwardCompatible('SELECT 1; -- vsi: backward-compatible')).toBe(false);
  });

  it('goes on when every newer migration is compatible; an unrecorded one counts as incompatible', () => {
    expect(judgeSchema([]).state).toBe('current');
    expect(judgeSchema([{ createdAt: 2, tag: '0015_a', compatible: true }]).state).toBe('newer-compatible');
    const v = judgeSchema([
      { createdAt: 2, tag: '0015_a', compatible: true },
      { createdAt: 3, tag: null, compatible: false },
    ]);
    expect(v.state).toBe('newer-incompatible');
    expect(schemaStopReason(v)).toContain('created_at 3 (not recorded in schema_compat)');
    expect(schemaStopReason(judgeSchema([]))).toBeUndefined();
  });
});

describe('migration lock settings', () => {
  it('defaults to a 5 s lock timeout and 5 retries, and refuses a bad value naming the variable', () => {
    expect(loadConfig({}).migration).toEqual({
      lockTimeoutMs: MIGRATION_LOCK_TIMEOUT_MS,
      lockRetries: MIGRATION_LOCK_RETRIES,
      prepare: true,
    });
    expect(loadConfig({ MIGRATION_LOCK_TIMEOUT_MS: '250', MIGRATION_LOCK_RETRIES: '0' }).migration).toEqual({
      lockTimeoutMs: 250,
      lockRetries: 0,
      prepare: true,
    });
    expect(loadConfig({ DATABASE_PREPARE: 'false' }).migration.prepare).toBe(false);
    expect(configErrorOf({ MIGRATION_LOCK_TIMEOUT_MS: '0' })).toMatch(/^MIGRATION_LOCK_TIMEOUT_MS: /);
    expect(configErrorOf({ MIGRATION_LOCK_TIMEOUT_MS: '50' })).toMatch(/^MIGRATION_LOCK_TIMEOUT_MS: .*100/);
    expect(configErrorOf({ MIGRATION_LOCK_RETRIES: '-1' })).toMatch(/^MIGRATION_LOCK_RETRIES: /);
    expect(configErrorOf({ MIGRATION_LOCK_RETRIES: '101' })).toMatch(/^MIGRATION_LOCK_RETRIES: .*100/);
  });
});
