/**
 * A private PgBouncer in transaction pooling for a fault scenario, from the Debian package: a
 * generated ini on a free port in front of a test's own Postgres (any database name is passed
 * through, `* = host port`), trust auth (the user must still be in the auth file), and a small
 * server pool per database and user, so that clients really share server connections: each
 * transaction may run on another one, as behind a production pooler.
 *
 * PgBouncer refuses to run as root: when the test runs as root, it runs as `postgres` (runuser),
 * like the Postgres cluster of pg-cluster.ts.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { cleanupWhenGone, freePort, shellQuote, waitUntil } from './proc.ts';

/** Where Debian installs it (`apt-get install pgbouncer`); PGBOUNCER_BIN overrides. */
const PGBOUNCER_BIN = process.env.PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer';

export interface PgBouncerOptions {
  /** host port of the Postgres behind it */
  pgPort: number;
  /** server connections per database and user; default 10 */
  poolSize?: number;
  /** client connections accepted; default 1000 */
  maxClientConn?: number;
}

export interface PgBouncer {
  port: number;
  /** postgres://postgres@127.0.0.1:PORT/<database> */
  url(database: string): string;
  /** `SHOW <what>` on the admin console (POOLS, STATS, SERVERS, ...) */
  show(what: string): Promise<Record<string, unknown>[]>;
  /** the pooler's own log */
  log(): string;
  stop(): Promise<void>;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

export async function startPgBouncer(opts: PgBouncerOptions): Promise<PgBouncer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'vsi-faults-pgbouncer-'));
  const pidFile = join(dir, 'pgbouncer.pid');
  const logFile = join(dir, 'pgbouncer.log');
  cleanupWhenGone(
    `[ -f ${shellQuote(pidFile)} ] && kill -9 "$(cat ${shellQuote(pidFile)})" 2>/dev/null; rm -rf ${shellQuote(dir)}`,
  );
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${opts.pgPort}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      // no Unix socket: the test's TCP port is the only way in
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'admin_users = postgres',
      'pool_mode = transaction',
      `max_client_conn = ${opts.maxClientConn ?? 1000}`,
      `default_pool_size = ${opts.poolSize ?? 10}`,
      'reserve_pool_size = 0',
      // postgres.js sends only user, database, client_encoding and application_name, which
      // PgBouncer tracks itself; other drivers (pgjdbc, psycopg) send extra_float_digits
      'ignore_startup_parameters = extra_float_digits',
      `logfile = ${logFile}`,
      `pidfile = ${pidFile}`,
      '',
    ].join('\n'),
  );
  if (isRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    for (const f of [dir, ini, join(dir, 'userlist.txt')]) chownSync(f, uid, gid);
  }
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', PGBOUNCER_BIN, ini]] : [PGBOUNCER_BIN, [ini]];
  const child: ChildProcess = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;

  const show = async (what: string): Promise<Record<string, unknown>[]> => {
    // the admin console speaks only the simple query protocol
    const admin = postgres(url('pgbouncer'), {
      max: 1,
      connect_timeout: 2,
      prepare: false,
      fetch_types: false,
      onnotice: () => {},
    });
    try {
      return [...(await admin.unsafe(`SHOW ${what}`).simple())] as Record<string, unknown>[];
    } finally {
      await admin.end({ timeout: 1 });
    }
  };

  await waitUntil(
    async () => {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}: ${stderr.trim()}`);
      try {
        await show('VERSION');
        return true;
      } catch {
        return undefined;
      }
    },
    15_000,
    `pgbouncer on port ${port}`,
    100,
  );

  return {
    port,
    url,
    show,
    log() {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        // SIGTERM: immediate shutdown (SIGINT would wait for clients), sent to pgbouncer itself,
        // not to runuser
        try {
          process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGTERM');
        } catch {
          child.kill('SIGTERM');
        }
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
