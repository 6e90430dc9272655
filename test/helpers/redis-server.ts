/**
 * A private `redis-server` for a fault scenario: spawned on a free port with no persistence
 * (`--save '' --appendonly no`), so a SIGKILL and a restart give an empty Redis, as a Redis
 * without persistence does after a crash. Never the shared Redis of the machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanupWhenGone, freePort, shellQuote, waitUntil } from './proc.ts';

export interface RedisServer {
  port: number;
  /** redis://[:password@]127.0.0.1:PORT */
  url: string;
  /** the server's working directory (where SAVE writes dump.rdb) */
  dir: string;
  /** SIGKILL the server and wait until it is gone */
  kill(): Promise<void>;
  /** start it again on the same port (empty: nothing was persisted) */
  start(): Promise<void>;
  /** send one command (after AUTH when a password is set) and return the raw reply */
  command(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

export interface RedisServerOptions {
  /** extra arguments, e.g. ['--maxmemory-policy', 'allkeys-lru'] */
  args?: string[];
  /** `requirepass`: every connection must AUTH first, as a production server asks */
  password?: string;
}

const resp = (args: string[]) =>
  `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

/**
 * Send a command as a RESP array (after AUTH when `password` is given) and read until the reply
 * looks complete (good enough for tests).
 */
export function redisCommand(port: number, args: string[], timeoutMs = 5_000, password?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    let out = '';
    let authing = password !== undefined;
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`redis ${args[0]}: no reply in ${timeoutMs} ms`));
    }, timeoutMs);
    s.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    s.on('data', (d) => {
      out += d.toString('latin1');
      if (!out.endsWith('\r\n')) return;
      if (authing) {
        authing = false;
        if (!out.startsWith('+OK')) {
          clearTimeout(timer);
          s.destroy();
          reject(new Error(`redis AUTH: ${out.trim()}`));
          return;
        }
        out = '';
        s.write(resp(args));
        return;
      }
      clearTimeout(timer);
      s.end();
      resolve(out);
    });
    s.write(resp(password === undefined ? args : ['AUTH', password]));
  });
}

export async function startRedisServer(opts: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'vsi-faults-redis-'));
  const pidFile = join(dir, 'redis.pid');
  // whatever happens to this test process, the server goes with it
  cleanupWhenGone(
    `[ -f ${shellQuote(pidFile)} ] && kill -9 "$(cat ${shellQuote(pidFile)})" 2>/dev/null; rm -rf ${shellQuote(dir)}`,
  );
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async () => {
    const c = spawn(
      'redis-server',
      [
        ...[
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          dir,
          '--pidfile',
          pidFile,
        ],
        ...(opts.password === undefined ? [] : ['--requirepass', opts.password]),
        ...(opts.args ?? []),
      ],
      { stdio: ['ignore', 'ignore', 'ignore'] },
    );
    child = c;
    exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    await waitUntil(
      async () => {
        if (c.exitCode !== null) throw new Error(`redis-server exited with ${c.exitCode} on port ${port}`);
        try {
          return (await redisCommand(port, ['PING'], 1_000, opts.password)).startsWith('+PONG') ? true : undefined;
        } catch {
          return undefined;
        }
      },
      15_000,
      `redis-server on port ${port}`,
    );
  };

  const kill = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  };

  await start();
  return {
    port,
    url: `redis://${opts.password === undefined ? '' : `:${encodeURIComponent(opts.password)}@`}127.0.0.1:${port}`,
    dir,
    kill,
    start,
    command: (...args) => redisCommand(port, args, 5_000, opts.password),
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
