/**
 * A private Redis Cluster for a fault scenario: `redis-server --cluster-enabled yes` × 6 on free
 * ports (no persistence), joined by `redis-cli --cluster create ... --cluster-replicas 1`: three
 * masters, each with a replica that takes over `nodeTimeoutMs` after its master dies.
 *
 *   const c = await startRedisCluster();
 *   env.REDIS_CLUSTER_NODES = c.nodesEnv;
 *   const port = await c.masterOfKey('{vsi-faults-abc}');
 *   await c.kill(port);                       // its replica is promoted
 *   await c.stop();
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cleanupWhenGone, freePort, shellQuote, waitUntil } from './proc.ts';
import { redisCommand } from './redis-server.ts';

const run = promisify(execFile);

export interface RedisClusterNodeInfo {
  port: number;
  role: 'master' | 'slave';
  /** connected, not flagged fail */
  alive: boolean;
  /** hash slot ranges served (masters), e.g. [[0, 5460]] */
  slots: [number, number][];
}

export interface RedisCluster {
  /** the client ports of the six nodes */
  ports: number[];
  /** REDIS_CLUSTER_NODES: every node, `127.0.0.1:PORT,...` */
  nodesEnv: string;
  /** a bulk/integer/status reply, raw, from one node */
  command(port: number, ...args: string[]): Promise<string>;
  /** CLUSTER NODES as seen by a live node */
  nodes(): Promise<RedisClusterNodeInfo[]>;
  /** the port of the master serving `key`'s slot (CLUSTER KEYSLOT, then CLUSTER NODES) */
  masterOfKey(key: string): Promise<number>;
  /** SIGKILL one node and wait until it is gone */
  kill(port: number): Promise<void>;
  /** wait until a live node says cluster_state:ok and every slot has a live master */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** cluster-node-timeout, ms: how long a silent master is waited for before its replica takes over; default 2000 */
  nodeTimeoutMs?: number;
}

/** The value of a bulk reply (`$n\r\n...\r\n`) or an integer (`:n`). */
function replyText(raw: string): string {
  if (raw.startsWith('$')) return raw.slice(raw.indexOf('\r\n') + 2).replace(/\r\n$/, '');
  if (raw.startsWith(':') || raw.startsWith('+')) return raw.slice(1).trim();
  throw new Error(`redis: ${raw.trim()}`);
}

export async function startRedisCluster(opts: RedisClusterOptions = {}): Promise<RedisCluster> {
  const nodeTimeoutMs = opts.nodeTimeoutMs ?? 2_000;
  const dir = mkdtempSync(join(tmpdir(), 'vsi-faults-redis-cluster-'));
  const children = new Map<number, ChildProcess>();
  const exited = new Map<number, Promise<void>>();
  const ports: number[] = [];
  for (let i = 0; i < 6; i++) {
    const port = await freePort();
    // the cluster bus needs a port too; the default (port + 10000) may be taken or past 65535
    const busPort = await freePort();
    const nodeDir = join(dir, String(port));
    const pidFile = join(nodeDir, 'redis.pid');
    await run('mkdir', ['-p', nodeDir]);
    cleanupWhenGone(`[ -f ${shellQuote(pidFile)} ] && kill -9 "$(cat ${shellQuote(pidFile)})" 2>/dev/null`);
    const c = spawn(
      'redis-server',
      [
        ...['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1'],
        ...[
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(nodeDir, 'nodes.conf'),
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
        ],
        ...['--save', '', '--appendonly', 'no', '--dir', nodeDir, '--pidfile', pidFile],
      ],
      { stdio: ['ignore', 'ignore', 'ignore'] },
    );
    children.set(port, c);
    exited.set(port, new Promise<void>((resolve) => c.once('exit', () => resolve())));
    ports.push(port);
  }
  cleanupWhenGone(`rm -rf ${shellQuote(dir)}`);
  for (const port of ports) {
    await waitUntil(
      async () => {
        try {
          return (await redisCommand(port, ['PING'], 1_000)).startsWith('+PONG') ? true : undefined;
        } catch {
          return undefined;
        }
      },
      15_000,
      `redis-server (cluster) on port ${port}`,
    );
  }
  await run(
    'redis-cli',
    ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'],
    { timeout: 60_000 },
  );

  const alivePorts = () =>
    ports.filter((p) => children.get(p)?.exitCode === null && children.get(p)?.signalCode === null);
  const command = (port: number, ...args: string[]) => redisCommand(port, args, 5_000);

  const cluster: RedisCluster = {
    ports,
    nodesEnv: ports.map((p) => `127.0.0.1:${p}`).join(','),
    command,
    async nodes() {
      const text = replyText(await command(alivePorts()[0]!, 'CLUSTER', 'NODES'));
      return text
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((line) => {
          const f = line.split(' ');
          const port = Number(f[1]!.split('@')[0]!.split(':').pop());
          const flags = f[2]!.split(',');
          const slots = f
            .slice(8)
            .filter((s) => /^\d+(-\d+)?$/.test(s))
            .map((s) => {
              const [a, b] = s.split('-').map(Number);
              return [a!, b ?? a!] as [number, number];
            });
          return {
            port,
            role: flags.includes('master') ? 'master' : 'slave',
            alive: !flags.includes('fail') && f[7] === 'connected',
            slots,
          };
        });
    },
    async masterOfKey(key) {
      const slot = Number(replyText(await command(alivePorts()[0]!, 'CLUSTER', 'KEYSLOT', key)));
      const owner = (await cluster.nodes()).find(
        (n) => n.role === 'master' && n.alive && n.slots.some(([a, b]) => slot >= a && slot <= b),
      );
      if (!owner) throw new Error(`no live master serves slot ${slot}`);
      return owner.port;
    },
    async kill(port) {
      const c = children.get(port);
      if (c && c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await exited.get(port);
      }
    },
    async waitHealthy(timeoutMs = 30_000) {
      await waitUntil(
        async () => {
          try {
            const info = replyText(await command(alivePorts()[0]!, 'CLUSTER', 'INFO'));
            if (!info.includes('cluster_state:ok')) return undefined;
            const masters = (await cluster.nodes()).filter((n) => n.role === 'master' && n.alive);
            const served = masters.reduce((sum, m) => sum + m.slots.reduce((s, [a, b]) => s + b - a + 1, 0), 0);
            return served === 16384 ? true : undefined;
          } catch {
            return undefined;
          }
        },
        timeoutMs,
        'the Redis Cluster to be healthy',
        200,
      );
    },
    async stop() {
      for (const port of ports) await cluster.kill(port);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.waitHealthy();
  return cluster;
}
