/**
 * The start-up check of the postgres.js crash guard (src/db/driver-guard.ts): this checkout's
 * driver carries it (postinstall), the check names the mark the patch script writes, and a
 * driver without it is refused with what to do.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  assertDriverGuarded,
  DRIVER_GUARD_MARK,
  DRIVER_TYPES_MARK,
  DriverUnguardedError,
  driverRoot,
} from '../../src/db/driver-guard.ts';

const work = mkdtempSync(join(tmpdir(), 'vsi-driver-guard-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the postgres.js crash guard', () => {
  it('is written by scripts/patch-postgres.mjs with the mark the check looks for', () => {
    const script = readFileSync(new URL('../../scripts/patch-postgres.mjs', import.meta.url), 'utf8');
    expect(script).toContain(`const MARK = '${DRIVER_GUARD_MARK}'`);
    expect(script).toContain(`const TYPES_MARK = '${DRIVER_TYPES_MARK}'`);
  });

  it('is on the driver this checkout loads', () => {
    expect(() => assertDriverGuarded()).not.toThrow();
  });

  it('refuses a driver whose files lack it, naming the files and the fix', () => {
    const copy = join(work, 'postgres');
    cpSync(driverRoot(), copy, { recursive: true });
    const esm = join(copy, 'src', 'connection.js');
    writeFileSync(esm, readFileSync(esm, 'utf8').split(DRIVER_GUARD_MARK).join(''));
    let thrown: unknown;
    try {
      assertDriverGuarded(copy);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(DriverUnguardedError);
    expect((thrown as Error).message).toContain('src/connection.js');
    expect((thrown as Error).message).not.toContain('cjs/src/connection.js');
    expect((thrown as Error).message).toContain('node scripts/patch-postgres.mjs');
  });

  it('refuses a driver patched by an older script, with the nextWrite guard but not the fetchArrayTypes handler', () => {
    const copy = join(work, 'postgres-old');
    cpSync(driverRoot(), copy, { recursive: true });
    const cjs = join(copy, 'cjs', 'src', 'connection.js');
    writeFileSync(cjs, readFileSync(cjs, 'utf8').split(DRIVER_TYPES_MARK).join(''));
    expect(readFileSync(cjs, 'utf8')).toContain(DRIVER_GUARD_MARK);
    expect(() => assertDriverGuarded(copy)).toThrow(/cjs\/src\/connection\.js/);
  });
});
