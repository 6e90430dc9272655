/**
 * The Redis settings (issue #16): QUEUE_PREFIX must hold a hash tag in every mode,
 * REDIS_CLUSTER_NODES is a list of host:port or redis:// items, and no password is ever echoed.
 */
import { describe, expect, it } from 'vitest';
import { hashTagOf, loadConfig } from '../../src/config.ts';
import { configErrorOf } from '../helpers/config.ts';

describe('Redis settings', () => {
  it('reads a hash tag as Redis Cluster does: the first {...} with something inside', () => {
    expect(hashTagOf('{vsi}')).toBe('vsi');
    expect(hashTagOf('app:{vsi-test-1}:x')).toBe('vsi-test-1');
    expect(hashTagOf('vsi')).toBeUndefined();
    expect(hashTagOf('{}vsi')).toBeUndefined();
    expect(hashTagOf('{}{vsi}')).toBeUndefined();
    expect(hashTagOf('{vsi')).toBeUndefined();
  });

  it('refuses a QUEUE_PREFIX without a hash tag, naming it and an example, with or without a cluster', () => {
    for (const env of [{ QUEUE_PREFIX: 'vsi' }, { QUEUE_PREFIX: '{}vsi', REDIS_CLUSTER_NODES: 'a:7000' }] as Record<
      string,
      string
    >[]) {
      const m = configErrorOf(env);
      expect(m).toMatch(/^QUEUE_PREFIX: invalid value ".*vsi"/);
      expect(m).toContain('e.g. {vsi}');
    }
    expect(loadConfig({}).queuePrefix).toBe('{vsi}');
  });

  it('parses REDIS_CLUSTER_NODES items, with a password from their URLs or REDIS_PASSWORD', () => {
    const c = loadConfig({ REDIS_CLUSTER_NODES: 'a:7000, redis://:s3cret@b:7001,[::1]:7002' });
    expect(c.redisClusterNodes).toEqual([
      { host: 'a', port: 7000 },
      { host: 'b', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    expect(c.redisPassword).toBe('s3cret');
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_PASSWORD: 'pw' }).redisPassword).toBe('pw');
    // as with REDIS_URL (ioredis): a password written in the URL wins
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'redis://:s3cret@b:7001', REDIS_PASSWORD: 'pw' }).redisPassword).toBe(
      's3cret',
    );
    expect(loadConfig({}).redisClusterNodes).toBeUndefined();
  });

  it('names the bad item of REDIS_CLUSTER_NODES and an example, never its password', () => {
    for (const [list, item] of [
      ['redis-1', 'redis-1'],
      ['a:7000,,b:7001', ''],
      ['a:7000,redis://:s3cret@b:port', 'redis://:***@b:port'],
      ['rediss://c:7000', 'rediss://c:7000'],
      ['a:70000', 'a:70000'],
    ] as const) {
      const m = configErrorOf({ REDIS_CLUSTER_NODES: list });
      expect(m).toMatch(/^REDIS_CLUSTER_NODES: /);
      expect(m).toContain(`invalid item ${JSON.stringify(item)}`);
      expect(m).toContain('e.g. redis-1:6379,redis-2:6379');
      expect(m).not.toContain('s3cret');
    }
    expect(configErrorOf({ REDIS_CLUSTER_NODES: 'redis://:x@a:1,redis://:y@b:2' })).toMatch(
      /^REDIS_CLUSTER_NODES: .*different passwords/,
    );
    expect(configErrorOf({ REDIS_PASSWORD: 'pass\nword' })).toBe(
      'REDIS_PASSWORD: invalid value (value hidden): expected no control characters (a stray newline?)',
    );
  });
});
