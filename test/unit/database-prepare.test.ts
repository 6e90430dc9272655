/**
 * DATABASE_PREPARE: prepared statements on by default, off with `false` in every
 * client the connection module builds (the pool and the migrator take `clientOptions`), and a malformed value
 * is a ConfigError naming the variable and what is valid.
 */
import { expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { clientOptions, createDb } from '../../src/db/connection.ts';

it('defaults to prepared statements; `false` turns them off; anything else names the variable', () => {
  expect(loadConfig({}).databasePrepare).toBe(true);
  expect(loadConfig({ DATABASE_PREPARE: 'true' }).databasePrepare).toBe(true);
  expect(loadConfig({ DATABASE_PREPARE: 'false' }).databasePrepare).toBe(false);
  for (const bad of ['no', '0', 'FALSE']) {
    let err: unknown;
    try {
      loadConfig({ DATABASE_PREPARE: bad });
    } catch (e: unknown) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^DATABASE_PREPARE: invalid value ".*": expected true or false$/);
  }
});

it('reaches the pool', async () => {
  expect(clientOptions().prepare).toBe(true);
  expect(clientOptions({ prepare: false }).prepare).toBe(false);
  // nothing connects: postgres.js opens connections lazily
  const h = createDb('postgres://postgres@127.0.0.1:1/none', { prepare: false });
  try {
    expect(h.sql.options.prepare).toBe(false);
  } finally {
    await h.close();
  }
});
