/**
 * A private Postgres cluster for a fault scenario, from the Debian binaries: `initdb` into a
 * temporary directory owned by the `postgres` OS user, the server on a free port (trust auth,
 * or a password over TCP when asked; no fsync: nothing here must survive the machine), started
 * and stopped with `pg_ctl`. A scenario may SIGKILL it (every server process, as an OOM kill
 * would) and start it again: Postgres then runs crash recovery from its WAL, as a production
 * server does after a crash.
 *
 * When the test runs as root, the binaries run as `postgres` (runuser); otherwise as the
 * current user. Never the shared server of the machine.
 */
import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { cleanupWhenGone, freePort, shellQuote, waitUntil } from './proc.ts';

const run = promisify(execFile);

/** Where Debian puts the server binaries; PG_BIN overrides. */
export function pgBinDir(): string {
  const fromEnv = process.env.PG_BIN;
  if (fromEnv) return fromEnv;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error('no Postgres server binaries under /usr/lib/postgresql (set PG_BIN)');
  return join(root, versions[0]!, 'bin');
}

export interface PgClusterOptions {
  /**
   * the `postgres` user's password: TCP connections then need it (scram-sha-256), as a
   * production server does; the Unix socket stays trust. Default: none (trust everywhere).
   */
  password?: string;
  /** the server binaries to run (an install of their own: see installWithoutPgvector); default pgBinDir() */
  binDir?: string;
}

export interface PgCluster {
  port: number;
  /** postgres://postgres[:password]@127.0.0.1:PORT/<database> */
  url(database: string): string;
  dataDir: string;
  /** SIGKILL the postmaster and every backend, and wait until they are gone */
  kill(): Promise<void>;
  /** start the server (after kill or stop); waits until it accepts connections */
  start(): Promise<void>;
  /** `pg_dump` of a database as plain SQL */
  dump(database: string): Promise<string>;
  /** stop (fast) and remove the data directory */
  destroy(): Promise<void>;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Run a server binary as the postgres user (when root) or as ourselves. */
async function pgRun(
  binDir: string,
  bin: string,
  args: string[],
  timeoutMs = 60_000,
  env?: Record<string, string>,
): Promise<string> {
  const file = join(binDir, bin);
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
  const r = await run(cmd, argv, {
    timeout: timeoutMs,
    maxBuffer: 256 * 1024 * 1024,
    env: env ? { ...process.env, ...env } : undefined,
  });
  return r.stdout;
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // the command name may hold blanks: the fields after it start after the last ')'
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function startPgCluster(opts: PgClusterOptions = {}): Promise<PgCluster> {
  const binDir = opts.binDir ?? pgBinDir();
  const port = await freePort();
  const base = mkdtempSync(join(tmpdir(), 'vsi-faults-pg-'));
  const owner = isRoot()
    ? {
        uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
        gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
      }
    : undefined;
  if (owner) chownSync(base, owner.uid, owner.gid);
  const dataDir = join(base, 'data');
  // whatever happens to this test process (killed mid-afterAll included), the cluster goes with it
  const asPostgres = isRoot() ? 'runuser -u postgres -- ' : '';
  cleanupWhenGone(
    `[ -f ${shellQuote(join(dataDir, 'postmaster.pid'))} ] && ${asPostgres}${shellQuote(join(binDir, 'pg_ctl'))} -D ${shellQuote(dataDir)} -m immediate -w stop >/dev/null 2>&1; rm -rf ${shellQuote(base)}`,
  );
  const auth = ['-A', 'trust'];
  if (opts.password !== undefined) {
    const pwFile = join(base, 'pwfile');
    writeFileSync(pwFile, `${opts.password}\n`, { mode: 0o600 });
    if (owner) chownSync(pwFile, owner.uid, owner.gid);
    auth.push('--auth-host=scram-sha-256', `--pwfile=${pwFile}`);
  }
  await pgRun(binDir, 'initdb', [
    '-D',
    dataDir,
    ...auth,
    '-U',
    'postgres',
    '--no-sync',
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
  ]);
  if (opts.password !== undefined) rmSync(join(base, 'pwfile'));
  const options = [
    `-p ${port}`,
    `-k ${base}`,
    '-c listen_addresses=127.0.0.1',
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
    '-c shared_buffers=32MB',
  ].join(' ');
  const user = opts.password === undefined ? 'postgres' : `postgres:${encodeURIComponent(opts.password)}`;
  const url = (database: string) => `postgres://${user}@127.0.0.1:${port}/${database}`;

  const ready = async () => {
    await waitUntil(
      async () => {
        const sql = postgres(url('postgres'), { max: 1, connect_timeout: 2, onnotice: () => {} });
        try {
          await sql`select 1`;
          return true;
        } catch {
          return undefined;
        } finally {
          await sql.end({ timeout: 1 });
        }
      },
      60_000,
      `postgres on port ${port}`,
      200,
    );
  };

  const start = async () => {
    await pgRun(binDir, 'pg_ctl', [
      '-D',
      dataDir,
      '-o',
      options,
      '-l',
      join(base, 'server.log'),
      '-w',
      '-t',
      '60',
      'start',
    ]);
    await ready();
  };

  const postmasterPid = (): number | undefined => {
    try {
      return Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return undefined;
    }
  };

  await start();
  return {
    port,
    url,
    dataDir,
    async kill() {
      const pid = postmasterPid();
      if (pid === undefined || !alive(pid)) return;
      const victims = [pid, ...childrenOf(pid)];
      for (const p of victims) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await waitUntil(
        () => (victims.some(alive) ? undefined : true),
        15_000,
        'the killed postgres processes to exit',
        50,
      );
    },
    start,
    async dump(database) {
      const env = opts.password === undefined ? undefined : { PGPASSWORD: opts.password };
      return pgRun(
        binDir,
        'pg_dump',
        ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '--no-owner', database],
        120_000,
        env,
      );
    },
    async destroy() {
      try {
        await pgRun(binDir, 'pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], 30_000);
      } catch {
        // not running
      }
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/**
 * A Postgres install without pgvector, for the tests of a server that lacks it: the machine's own
 * server hard-linked into a temporary prefix (`usr/lib/postgresql/N`, `usr/share/postgresql/N`;
 * Postgres finds its share and library directories relative to its binaries), the extension's
 * files left out of the copy. Its bin directory, for `startPgCluster({ binDir })`; removed with
 * the test process.
 */
export function installWithoutPgvector(): string {
  const bin = pgBinDir();
  const version = bin.split('/').at(-2)!;
  const root = mkdtempSync(join(tmpdir(), 'vsi-pg-without-vector-'));
  chmodSync(root, 0o755);
  cleanupWhenGone(`rm -rf ${shellQuote(root)}`);
  const lib = join(root, 'usr/lib/postgresql');
  const share = join(root, 'usr/share/postgresql');
  mkdirSync(lib, { recursive: true });
  mkdirSync(share, { recursive: true });
  execFileSync('cp', ['-al', join(bin, '..'), join(lib, version)]);
  execFileSync('cp', ['-al', `/usr/share/postgresql/${version}`, join(share, version)]);
  const extensions = join(share, version, 'extension');
  for (const f of readdirSync(extensions)) if (/^vector[.-]/.test(f)) rmSync(join(extensions, f));
  rmSync(join(lib, version, 'lib', 'vector.so'), { force: true });
  return join(lib, version, 'bin');
}
