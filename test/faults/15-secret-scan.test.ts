/**
 * Scenario 15: secret scan. After a 401 (a wrong key), network errors and a full run at the most
 * verbose log level, neither the API key nor the wrong one appears anywhere the product writes:
 * the processes' logs and error messages, Redis (every key and value, from an uncompressed RDB
 * dump), Postgres (a full pg_dump), `status --json`.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';

const SECRET = `sk-live-faultsuite-${randomBytes(12).toString('hex')}`;
const WRONG = `sk-live-wrongkey-${randomBytes(12).toString('hex')}`;

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('15-secrets', { sim: { apiKey: SECRET, catalog: { channels: 1, channelSizes: [60] } } });
});
afterAll(async () => {
  await rig?.close();
});

it('15 secret scan: the API key is in no log, error, Redis key or value, Postgres row, or status --json', async () => {
  expect(rig.env.API_KEY).toBe(SECRET);
  const verbose = { LOG_LEVEL: 'trace' };
  const outputs: { where: string; text: string }[] = [];
  const keep = (where: string, r: { stdout: string; stderr: string }) => outputs.push({ where, text: `${r.stdout}\n${r.stderr}` });

  const ch = rig.sim.catalog.channels()[0]!;
  const migrate = await rig.run(['migrate'], verbose);
  expect(migrate.code, migrate.stderr).toBe(0);
  keep('migrate', migrate);
  const add = await rig.run(['sources', 'add', 'channel', ch.id, '--lang', 'en'], verbose);
  expect(add.code, add.stderr).toBe(0);
  keep('sources add', add);

  // a 401: the wrong key
  const refused = await rig.run(['backfill', '--all', '--timeout', '30s'], { ...verbose, API_KEY: WRONG });
  expect(refused.code).toBe(3);
  expect(refused.stdout + refused.stderr).toMatch(/unauthorized|Invalid API key/);
  keep('backfill with a wrong key (401)', refused);
  // network errors: every connection to the upstream is reset
  rig.apiProxy.set({ mode: 'reset' });
  const broken = await rig.run(['backfill', '--all', '--timeout', '30s'], verbose);
  expect(broken.code).not.toBe(0);
  expect(broken.stdout + broken.stderr).toMatch(/ECONNRESET|network|socket/i);
  keep('backfill through resets (network errors)', broken);
  rig.apiProxy.set({ mode: 'pass' });

  // a full run with a daemon beside it, everything at trace level
  const daemon = rig.cli(['daemon'], verbose, 'daemon');
  await daemon.waitForLog((l) => l.msg === 'daemon started', 60_000, 'daemon started');
  const full = await rig.run(['backfill', '--all', '--timeout', '60s'], verbose);
  expect(full.code, full.stdout + full.stderr).toBe(0);
  keep('backfill (full run)', full);
  const status = await rig.run(['status', '--json'], verbose);
  expect(status.code).toBe(0);
  keep('status --json', status);
  keep('status', await rig.run(['status'], verbose));
  keep('sources list --json', await rig.run(['sources', 'list', '--json'], verbose));
  daemon.kill('SIGTERM');
  await daemon.exited;
  keep('daemon', { stdout: daemon.stdout(), stderr: daemon.stderr() });
  const [v] = await rig.db().sql<{ n: number }[]>`select count(*)::int as n from videos`;
  expect(v!.n).toBe(publicVideoIds(rig.sim, ch.id).length);

  // Redis: every key and value, uncompressed
  await rig.redisServer.command('CONFIG', 'SET', 'rdbcompression', 'no');
  expect((await rig.redisServer.command('SAVE')).trim()).toBe('+OK');
  const rdb = readFileSync(join(rig.redisServer.dir, 'dump.rdb')).toString('latin1');
  outputs.push({ where: 'redis dump.rdb', text: rdb });
  // Postgres: everything
  const dump = await rig.pg.dump(rig.database);
  expect(dump).toMatch(/CREATE TABLE public\.batch_items/);
  outputs.push({ where: 'pg_dump', text: dump });

  const leaks = outputs.filter((o) => o.text.includes(SECRET) || o.text.includes(WRONG)).map((o) => o.where);
  const bytes = outputs.reduce((n, o) => n + o.text.length, 0);
  figures('15 secret-scan', { places: outputs.length, mb_scanned: bytes / 1e6, leaks: leaks.length });
  // the scan reads what it claims to: plain text of keys, values and rows
  expect(rdb).toContain(`${rig.prefix}:poll`);
  expect(dump).toContain(publicVideoIds(rig.sim, ch.id)[0]!);
  expect(outputs.find((o) => o.where === 'daemon')!.text).toContain('"msg":"daemon started"');
  expect(leaks).toEqual([]);
});
