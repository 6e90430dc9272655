/**
 * The Redis production needs, checked for real: docker-compose's Redis settings (read from the
 * file) keep the work in flight across a SIGKILL (AOF) and never evict it (noeviction); and a
 * daemon started against a Redis that may evict says so at startup, naming the risk.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { REPO_ROOT } from '../helpers/proc.ts';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.ts';

/** The `command:` list of the `redis` service in docker-compose.yml, without `redis-server`. */
function composeRedisArgs(): string[] {
  const lines = readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8').split('\n');
  const start = lines.findIndex((l) => /^ {2}redis:\s*$/.test(l));
  expect(start, 'a redis service in docker-compose.yml').toBeGreaterThanOrEqual(0);
  const cmd = lines.findIndex((l, i) => i > start && /^ {4}command:\s*$/.test(l));
  const args: string[] = [];
  for (let i = cmd + 1; i < lines.length && /^ {6}- /.test(lines[i]!); i++) {
    args.push(
      lines[i]!.replace(/^ {6}- /, '')
        .trim()
        .replace(/^"(.*)"$/, '$1'),
    );
  }
  expect(args[0]).toBe('redis-server');
  return args.slice(1);
}

let rig: FaultRig | undefined;
const servers: RedisServer[] = [];
afterAll(async () => {
  await Promise.allSettled(servers.map((s) => s.stop()));
  await rig?.close();
});

it("00 docker-compose's Redis keeps queued work across a SIGKILL and never evicts it", async () => {
  const args = composeRedisArgs();
  const redis = await startRedisServer({ args });
  servers.push(redis);
  const config = async (name: string) => (await redis.command('CONFIG', 'GET', name)).split('\r\n')[4];
  expect(await config('appendonly')).toBe('yes');
  expect(await config('appendfsync')).toBe('everysec');
  expect(await config('maxmemory-policy')).toBe('noeviction');
  // written to the AOF before the reply: a process kill (not a power cut) loses nothing
  expect((await redis.command('SET', '{vsi}:probe', 'in flight')).trim()).toBe('+OK');
  await redis.kill();
  await redis.start();
  const survived = (await redis.command('GET', '{vsi}:probe')).includes('in flight');
  figures('00 redis-settings', {
    appendonly: 'yes',
    appendfsync: 'everysec',
    policy: 'noeviction',
    survives_sigkill: survived,
  });
  expect(survived).toBe(true);
});

it('00 a daemon warns at startup when Redis may evict keys, and not otherwise', async () => {
  rig = await startFaultRig('00-redis-policy');
  const quiet = rig.cli(['daemon'], {}, 'daemon-noeviction');
  await quiet.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const lru = await startRedisServer({ args: ['--maxmemory-policy', 'allkeys-lru'] });
  servers.push(lru);
  const loud = rig.cli(['daemon'], { REDIS_URL: lru.url }, 'daemon-lru');
  const warning = await loud.waitForLog(
    (l) => l.event === 'daemon.redis_eviction_policy',
    60_000,
    'the eviction warning',
  );
  await loud.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  expect(warning.level).toBe(40);
  expect(warning.policy).toBe('allkeys-lru');
  expect(quiet.logs().some((l) => l.event === 'daemon.redis_eviction_policy')).toBe(false);
  for (const d of [quiet, loud]) d.kill('SIGTERM');
  const codes = await Promise.all([quiet.exited, loud.exited]);
  expect(codes.map((c) => c.code)).toEqual([0, 0]);
});
