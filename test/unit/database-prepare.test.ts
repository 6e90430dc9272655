/**
 * DATABASE_PREPARE (issue #16): prepared statements on by default, off with `false` in every
 * client the connection module builds (both pools take `clientOptions`), and a malformed value
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

it('reaches both pools', async () => {
  expect(clientOptions().prepare).toBe(true);
  expect(clientOptions({ prepare: false }).prepare).toBe(false);
  // nothing connects: postgres.js opens connections lazily
  const h = createDb('postgres://postgres@127.0.0.1:1/none', { prepare: false });
  try {
    expect(h.sql.options.prepare).toBe(false);
    // the drizzle pool's client (`Db` does not show it; createDb closes it the same way)
    expect((h.db as unknown as { $client: { options: { prepare: boolean } } }).$client.options.prepare).toBe(false);
  } finally {
    await h.close();
  }
});
