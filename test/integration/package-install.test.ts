/**
 * The package as a team installs it where it runs (issue #13, point 8): `npm pack`, which builds
 * dist/ on the way (`prepare`), then `npm install -g` of that tarball into an empty prefix, then
 * the installed `videosite-ingest` run from an empty folder: `--help`, `--version`, `migrate`
 * against a throwaway database, and `demo` (its own simulator and a `<database>_demo` database).
 * Nothing of the checkout is used once the tarball exists.
 *
 * The checkout is copied (its node_modules linked) and packed from the copy, so building does
 * not rewrite the dist/ that other test files' processes are running. The install takes the
 * dependencies from the npm cache of this machine (--prefer-offline), from the registry when
 * the cache lacks them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMANDS, VERSION } from '../../src/cli/main.ts';
import { DRIVER_GUARD_MARK, DRIVER_TYPES_MARK } from '../../src/db/driver-guard.ts';
import { DEMO_QUEUE_PREFIX } from '../../src/cli/demo.ts';
import { loadConfig } from '../../src/config.ts';
import { closeRedis, createRedis, deletePrefixKeys } from '../../src/queues/connection.ts';
import { dropDatabase, testDatabaseName, testServerUrl } from '../helpers/db.ts';

const CHECKOUT = fileURLToPath(new URL('../..', import.meta.url));
/** what the copy of the checkout leaves out: installed, built or produced by runs */
const NOT_COPIED = new Set([
  'node_modules',
  '.git',
  'dist',
  'coverage',
  'test-artifacts',
  'test-results',
  join('bench', 'results'),
]);
/** `npm pack` (a build) and `npm install -g` (~100 packages, most from the cache) */
const NPM_TIMEOUT_MS = 180_000;
const RUN_TIMEOUT_MS = 60_000;
/** environment of this machine that npm needs to reach the registry as configured here */
const NETWORK_VARS = [
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'npm_config_registry',
  'NPM_CONFIG_REGISTRY',
];

interface Proc {
  code: number | null;
  stdout: string;
  stderr: string;
}

const live = new Set<ChildProcess>();

/** Runs argv (no shell) in `cwd` with exactly `env` (nothing of vitest's, no npm_config_* of `npm test`). */
function run(argv: string[], cwd: string, env: Record<string, string>, timeoutMs: number): Promise<Proc> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      live.delete(child);
      reject(new Error(`cannot start ${argv.join(' ')}: ${e.message}`));
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      live.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

function show(p: Proc): string {
  const tail = (s: string) => (s.length > 4000 ? `...${s.slice(-4000)}` : s);
  return `exit ${p.code}\n--- stdout ---\n${tail(p.stdout)}\n--- stderr ---\n${tail(p.stderr)}`;
}

/** PATH with this node first: the installed command's shebang finds `node` on PATH. */
const PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;

function npmEnv(home: string): Record<string, string> {
  const env: Record<string, string> = { PATH, HOME: home };
  for (const v of NETWORK_VARS) if (process.env[v] !== undefined) env[v] = process.env[v]!;
  return env;
}

describe('the packed package installs into an empty prefix and runs there', () => {
  const work = mkdtempSync(join(tmpdir(), 'vsi-package-'));
  const prefix = join(work, 'prefix');
  /** where the installed command runs: a folder with nothing in it */
  const elsewhere = join(work, 'elsewhere');
  const installedBin = join(prefix, 'bin', 'videosite-ingest');
  const installedPackage = join(prefix, 'lib', 'node_modules', 'videosite-ingest');
  const home = process.env.HOME ?? work;
  const databases: string[] = [];
  let installed = false;
  let tarballPath = '';

  const runInstalled = (args: string[], env: Record<string, string> = {}) =>
    run([installedBin, ...args], elsewhere, { PATH, HOME: home, ...env }, RUN_TIMEOUT_MS);

  afterAll(async () => {
    for (const c of live) c.kill('SIGKILL');
    for (const name of databases) await dropDatabase(name);
    // `demo` ignores QUEUE_PREFIX: its queues live under DEMO_QUEUE_PREFIX on the shared Redis
    const redis = createRedis(loadConfig().redisUrl);
    await deletePrefixKeys(redis, DEMO_QUEUE_PREFIX).finally(() => closeRedis(redis));
    await rm(work, { recursive: true, force: true, maxRetries: 3 });
  }, 60_000);

  it(
    '`npm pack` builds dist/ into the tarball, and `npm install -g` of it gives a command',
    async () => {
      const copy = join(work, 'checkout');
      cpSync(CHECKOUT, copy, { recursive: true, filter: (p) => !NOT_COPIED.has(relative(CHECKOUT, p)) });
      symlinkSync(join(CHECKOUT, 'node_modules'), join(copy, 'node_modules'), 'dir');
      const packDir = join(work, 'pack');
      mkdirSync(packDir);
      const pack = await run(
        ['npm', 'pack', '--json', '--pack-destination', packDir],
        copy,
        npmEnv(home),
        NPM_TIMEOUT_MS,
      );
      expect(pack.code, show(pack)).toBe(0);
      // npm prints the lifecycle scripts' output before the JSON
      const [tarball] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('\n[') + 1)) as {
        filename: string;
        files: { path: string }[];
      }[];
      const files = tarball!.files.map((f) => f.path);
      expect(files).toEqual(
        expect.arrayContaining([
          'bin/videosite-ingest.js',
          'dist/cli/main.js',
          'dist/db/migrate.js',
          'scripts/patch-postgres.mjs',
          'package.json',
        ]),
      );
      const migrations = readdirSync(join(CHECKOUT, 'migrations')).filter((f) => f.endsWith('.sql'));
      expect(files).toEqual(expect.arrayContaining(migrations.map((f) => `migrations/${f}`)));
      // the sources, tests and benchmark stay home
      expect(
        files.filter((f) => !f.startsWith('node_modules/') && (/^(src|test|bench)\//.test(f) || f.endsWith('.ts'))),
      ).toEqual([]);
      // the one dependency it carries: the driver, patched (bundleDependencies)
      expect(files).toEqual(
        expect.arrayContaining([
          'node_modules/postgres/src/connection.js',
          'node_modules/postgres/cjs/src/connection.js',
        ]),
      );
      expect(files.filter((f) => f.startsWith('node_modules/') && !f.startsWith('node_modules/postgres/'))).toEqual([]);

      mkdirSync(elsewhere);
      const install = await run(
        [
          'npm',
          'install',
          '--global',
          '--prefix',
          prefix,
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          join(packDir, tarball!.filename),
        ],
        elsewhere,
        npmEnv(home),
        NPM_TIMEOUT_MS,
      );
      expect(install.code, show(install)).toBe(0);
      expect(existsSync(installedBin), `${installedBin} after the install\n${show(install)}`).toBe(true);
      installed = true;
      tarballPath = join(packDir, tarball!.filename);
      // what the installed package runs on: its production dependencies, patched, and no compiler
      expect(existsSync(join(installedPackage, 'src'))).toBe(false);
      for (const dev of ['tsx', 'typescript', 'vitest'])
        expect(existsSync(join(installedPackage, 'node_modules', dev)), dev).toBe(false);
      expect(
        readFileSync(join(installedPackage, 'node_modules', 'postgres', 'src', 'connection.js'), 'utf8'),
        'postinstall (scripts/patch-postgres.mjs) ran in the installed package',
      ).toContain('patched by videosite-ingest scripts/patch-postgres.mjs');
    },
    2 * NPM_TIMEOUT_MS,
  );

  it(
    'as a dependency installed without install scripts, beside an unpatched postgres at the top, it runs the patched driver it carries; an unguarded one is refused',
    async () => {
      expect(installed, 'the package did not install (see the test above)').toBe(true);
      const app = join(work, 'app');
      mkdirSync(app);
      writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
      const install = await run(
        [
          'npm',
          'install',
          '--ignore-scripts',
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          'postgres@3.4.9',
          tarballPath,
        ],
        app,
        npmEnv(home),
        NPM_TIMEOUT_MS,
      );
      expect(install.code, show(install)).toBe(0);
      const mark = DRIVER_GUARD_MARK;
      // the application's own postgres, from the registry: no script ran to patch it
      expect(readFileSync(join(app, 'node_modules', 'postgres', 'src', 'connection.js'), 'utf8')).not.toContain(mark);
      // the package's copy came patched inside the tarball
      const own = join(app, 'node_modules', 'videosite-ingest', 'node_modules', 'postgres', 'src', 'connection.js');
      expect(readFileSync(own, 'utf8')).toContain(mark);
      expect(readFileSync(own, 'utf8')).toContain(DRIVER_TYPES_MARK);

      const bin = join(app, 'node_modules', '.bin', 'videosite-ingest');
      const name = testDatabaseName('pkg_dep');
      databases.push(name);
      const migrate = () =>
        run([bin, 'migrate'], elsewhere, { PATH, HOME: home, DATABASE_URL: testServerUrl(name) }, RUN_TIMEOUT_MS);
      const ok = await migrate();
      expect(ok.code, show(ok)).toBe(0);

      // the copy it loads, without the guard: refused at start-up, before any connection
      writeFileSync(own, readFileSync(own, 'utf8').split(mark).join(''));
      const refused = await migrate();
      expect(refused.code, show(refused)).toBe(2);
      expect(refused.stderr).toContain('lacks the crash guard');
    },
    2 * NPM_TIMEOUT_MS,
  );

  it('`videosite-ingest --help` lists every command and the exit codes; --version prints the version', async () => {
    expect(installed, 'the package did not install (see the test above)').toBe(true);
    const [help, version] = await Promise.all([runInstalled(['--help']), runInstalled(['--version'])]);
    expect(help.code, show(help)).toBe(0);
    expect(help.stderr).toBe('');
    for (const [name, c] of Object.entries(COMMANDS)) {
      const start = c.summary.slice(0, 20).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      expect(help.stdout, show(help)).toMatch(new RegExp(`^ {2}${name}\\s+${start}`, 'm'));
    }
    expect(help.stdout).toContain('Exit codes (every command):');
    expect(version.code, show(version)).toBe(0);
    expect(version.stdout).toBe(`${VERSION}\n`);
  });

  it('each command loads only its own module: --help none, `status --help` status alone', async () => {
    expect(installed, 'the package did not install (see the test above)').toBe(true);
    // an ESM loader hook that notes every module the process loads
    writeFileSync(
      join(work, 'hooks.mjs'),
      "import { appendFileSync } from 'node:fs';\n" +
        'export async function load(url, context, next) {\n' +
        '  appendFileSync(process.env.VSI_LOADED_MODULES, `${url}\\n`);\n' +
        '  return next(url, context);\n' +
        '}\n',
    );
    writeFileSync(
      join(work, 'register.mjs'),
      "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n",
    );
    const distOf = pathToFileURL(join(installedPackage, 'dist')).href + '/';
    const loadedBy = async (args: string[]): Promise<string[]> => {
      const list = join(work, `loaded-${args.join('-')}.txt`);
      writeFileSync(list, '');
      const r = await runInstalled(args, {
        NODE_OPTIONS: `--import=${pathToFileURL(join(work, 'register.mjs')).href}`,
        VSI_LOADED_MODULES: list,
      });
      expect(r.code, show(r)).toBe(0);
      return readFileSync(list, 'utf8')
        .split('\n')
        .filter((u) => u.startsWith(distOf))
        .map((u) => u.slice(distOf.length));
    };
    const commandModules = (loaded: string[]) =>
      loaded.filter((m) => Object.keys(COMMANDS).some((name) => m === `cli/${name}.js`));
    const [rootHelp, statusHelp] = await Promise.all([loadedBy(['--help']), loadedBy(['status', '--help'])]);
    // main and the small pure helpers it prints with (terminal-text.js), no command's module
    expect(rootHelp).toContain('cli/main.js');
    expect(commandModules(rootHelp)).toEqual([]);
    expect(rootHelp.filter((m) => !['cli/main.js', 'terminal-text.js'].includes(m))).toEqual([]);
    expect(statusHelp).toContain('cli/main.js');
    expect(commandModules(statusHelp)).toEqual(['cli/status.js']);
  });

  it('`videosite-ingest migrate` applies every migration (they ship in the package)', async () => {
    expect(installed, 'the package did not install (see the test above)').toBe(true);
    const name = testDatabaseName('pkg_migrate');
    databases.push(name);
    const migrations = readdirSync(join(CHECKOUT, 'migrations')).filter((f) => f.endsWith('.sql')).length;
    const r = await runInstalled(['migrate'], { DATABASE_URL: testServerUrl(name) });
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe(`database ${name}: created; ${migrations} migration(s) applied\n`);
  });

  it(
    '`videosite-ingest demo` runs the whole product: rows land in its demo database',
    async () => {
      expect(installed, 'the package did not install (see the test above)').toBe(true);
      const name = testDatabaseName('pkg_demo');
      const demoDb = `${name}_demo`;
      databases.push(name, demoDb);
      const r = await runInstalled(['demo'], { DATABASE_URL: testServerUrl(name), QUEUE_PREFIX: `{vsi-test-${name}}` });
      expect(r.code, show(r)).toBe(0);
      expect(r.stdout, show(r)).toContain('The rows are in Postgres');
      const sql = postgres(testServerUrl(demoDb), { max: 1, onnotice: () => {} });
      try {
        const [row] = await sql<{ videos: number; transcripts: number }[]>`
        select (select count(*)::int from videos) as videos, (select count(*)::int from transcripts) as transcripts`;
        expect(row!.videos).toBeGreaterThan(0);
        expect(row!.transcripts).toBeGreaterThan(0);
      } finally {
        await sql.end({ timeout: 5 });
      }
    },
    2 * RUN_TIMEOUT_MS,
  );
});
