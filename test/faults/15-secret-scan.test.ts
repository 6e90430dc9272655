/**
 * Scenario 15: secret scan. Postgres and Redis require passwords (DATABASE_URL and REDIS_URL
 * carry them, as in production), and the daemon serves its admin pages behind ADMIN_TOKEN. After
 * a 401 (a wrong API key), network errors, wrong database and Redis passwords, Redis and Postgres
 * dropping out under a running daemon, and a full run at the most verbose log level, none of the
 * secrets (the API key and the wrong one, the Postgres and Redis passwords and the wrong ones,
 * the admin token) appears anywhere the product writes or serves: the processes' logs and error
 * messages, `status --json`, Redis (every key and value, from an uncompressed RDB dump), Postgres
 * (a full pg_dump: every row of every table), and the admin server (`/metrics`, `/readyz`, the
 * overview page, the queue dashboard and its JSON API: queues with their jobs, each job and its
 * logs, workers, schedulers, Redis stats), read while work is in flight and while Redis and
 * Postgres are unreachable.
 *
 * How it fails when the property breaks: a secret written anywhere above is a leak by name and
 * place (`leaks`); the admin server's last-line redaction counts too (a redacted answer is
 * logged as a bug, and counted here), so a leak it hides still fails. The scan proves it reads
 * what it claims to: the rig's servers refuse the wrong passwords (so the right ones are in use),
 * the admin answers are the real pages (200, the queues listed, jobs seen), the dumps hold keys
 * and rows in plain text.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearer } from '../helpers/admin.ts';
import { figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { freePort, waitUntil, type CliProcess } from '../helpers/proc.ts';
import { redisCommand } from '../helpers/redis-server.ts';

const secret = (name: string) => `${name}-${randomBytes(12).toString('hex')}`;
const SECRETS = {
  apiKey: secret('sk-live-faultsuite'),
  wrongApiKey: secret('sk-live-wrongkey'),
  pgPassword: secret('pg-pass'),
  wrongPgPassword: secret('pg-wrongpass'),
  redisPassword: secret('redis-pass'),
  wrongRedisPassword: secret('redis-wrongpass'),
  adminToken: secret('admin-token'),
};
const QUEUES = ['schedule', 'poll', 'sink'];

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('15-secrets', {
    sim: { apiKey: SECRETS.apiKey, catalog: { channels: 1, channelSizes: [60] } },
    pg: { password: SECRETS.pgPassword },
    redis: { password: SECRETS.redisPassword },
  });
});
afterAll(async () => {
  await rig?.close();
});

it('15 secret scan: API key, database and Redis passwords, admin token in no log, error, Redis, Postgres row or admin page', async () => {
  expect(rig.env.API_KEY).toBe(SECRETS.apiKey);
  expect(rig.env.DATABASE_URL).toContain(`:${SECRETS.pgPassword}@`);
  expect(rig.env.REDIS_URL).toContain(`:${SECRETS.redisPassword}@`);
  // the servers ask for them: without the password Redis refuses commands
  expect(await redisCommand(rig.redisServer.port, ['PING'])).toMatch(/^-NOAUTH/);

  const verbose = { LOG_LEVEL: 'trace' };
  const outputs: { where: string; text: string }[] = [];
  const keep = (where: string, r: { stdout: string; stderr: string }) =>
    outputs.push({ where, text: `${r.stdout}\n${r.stderr}` });

  const ch = rig.sim.catalog.channels()[0]!;
  const migrate = await rig.run(['migrate'], verbose);
  expect(migrate.code, migrate.stderr).toBe(0);
  keep('migrate', migrate);
  const add = await rig.run(['sources', 'add', 'channel', ch.id, '--lang', 'en'], verbose);
  expect(add.code, add.stderr).toBe(0);
  keep('sources add', add);

  // wrong passwords: refused (so the right ones are what the rig uses), and not echoed
  const [wrongPg, wrongRedis] = await Promise.all([
    rig.run(['status', '--json'], {
      ...verbose,
      DATABASE_URL: rig.env.DATABASE_URL!.replace(SECRETS.pgPassword, SECRETS.wrongPgPassword),
    }),
    rig.run(['backfill', '--all', '--no-wait'], {
      ...verbose,
      REDIS_URL: rig.env.REDIS_URL!.replace(SECRETS.redisPassword, SECRETS.wrongRedisPassword),
    }),
  ]);
  expect(wrongPg.code, wrongPg.stdout + wrongPg.stderr).not.toBe(0);
  expect(wrongPg.stdout + wrongPg.stderr).toMatch(/password authentication failed|authentication/i);
  keep('status with a wrong database password', wrongPg);
  expect(wrongRedis.code, wrongRedis.stdout + wrongRedis.stderr).not.toBe(0);
  expect(wrongRedis.stdout + wrongRedis.stderr).toMatch(/WRONGPASS|Redis/);
  keep('backfill with a wrong Redis password', wrongRedis);

  // the daemon with its admin server, everything at trace level
  const adminPort = await freePort();
  const daemon = rig.cli(
    ['daemon', '--admin-port', String(adminPort)],
    { ...verbose, ADMIN_TOKEN: SECRETS.adminToken },
    'daemon',
  );
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const admin = `http://127.0.0.1:${adminPort}`;
  const adminStatus: Record<string, number> = {};
  let jobsSeen = 0;
  const get = async (path: string, where: string): Promise<string> => {
    const r = await fetch(`${admin}${path}`, {
      headers: bearer(SECRETS.adminToken),
      signal: AbortSignal.timeout(8_000),
    });
    const text = await r.text();
    outputs.push({ where: `admin ${path} (${where})`, text: `${JSON.stringify([...r.headers])}\n${text}` });
    adminStatus[path] = r.status;
    return text;
  };
  /**
   * Every admin page and dashboard answer, each listed job with its logs included; with
   * `pagesOnly`, the pages that answer without Redis (the dashboard waits for Redis to return).
   */
  const scanAdmin = async (where: string, pagesOnly = false): Promise<void> => {
    const pages = ['/healthz', '/readyz', '/metrics', '/'];
    const dashboard = [
      '/admin/queues',
      '/admin/queues/api/queues',
      '/admin/queues/api/redis/stats',
      '/admin/queues/api/job-schedulers',
    ];
    for (const path of pagesOnly ? pages : [...pages, ...dashboard]) {
      await get(path, where).catch((e: unknown) =>
        outputs.push({ where: `admin ${path} (${where}): no answer`, text: String(e) }),
      );
    }
    if (pagesOnly) return;
    // the drill-down pages: every source, the latest batches, a few raw items of each
    const drill = ['/batches'];
    const { sql } = rig.db();
    for (const s of await sql<{ id: number }[]>`select id from sources order by id`) drill.push(`/sources/${s.id}`);
    for (const b of await sql<{ job_id: string }[]>`select job_id from batches order by submitted_at desc limit 4`) {
      const job = encodeURIComponent(b.job_id);
      drill.push(`/batches/${job}`);
      for (const i of await sql<
        { video_id: string }[]
      >`select video_id from batch_items where job_id = ${b.job_id} order by video_id limit 2`) {
        drill.push(`/batches/${job}/items/${encodeURIComponent(i.video_id)}`);
      }
    }
    for (const path of drill) {
      await get(path, where).catch((e: unknown) =>
        outputs.push({ where: `admin ${path} (${where}): no answer`, text: String(e) }),
      );
    }
    for (const q of QUEUES) {
      let listing: { queues?: { name: string; jobs: { id: string }[] }[] } = {};
      try {
        listing = JSON.parse(
          await get(`/admin/queues/api/queues?activeQueue=${q}&status=latest&jobsPerPage=300`, where),
        ) as typeof listing;
      } catch {
        continue; // an answer that is not JSON was kept and is scanned as it is
      }
      await get(`/admin/queues/api/queues/${q}/workers`, where).catch(() => undefined);
      for (const job of listing.queues?.find((x) => x.name === q)?.jobs ?? []) {
        jobsSeen++;
        const id = encodeURIComponent(job.id);
        await get(`/admin/queues/api/queues/${q}/${id}`, where).catch(() => undefined);
        await get(`/admin/queues/api/queues/${q}/${id}/logs`, where).catch(() => undefined);
      }
    }
  };
  await scanAdmin('idle');

  // a 401: the wrong key
  const refused = await rig.run(['backfill', '--all', '--timeout', '30s'], {
    ...verbose,
    API_KEY: SECRETS.wrongApiKey,
  });
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
  await scanAdmin('after refusals');

  // a full run beside the daemon; the admin pages read while batches are in flight
  rig.sim.setJobSettings({ itemsPerSecond: 20 });
  const full: CliProcess = rig.cli(['backfill', '--all', '--timeout', '120s'], verbose, 'backfill');
  let scansInFlight = 0;
  while (full.running()) {
    await scanAdmin('in flight');
    scansInFlight++;
  }
  const fullExit = await full.exited;
  expect(fullExit.code, full.stdout() + full.stderr()).toBe(0);
  keep('backfill (full run)', { stdout: full.stdout(), stderr: full.stderr() });
  await scanAdmin('after the run');

  // Redis, then Postgres, out of reach under the running daemon: readiness and pages report it
  rig.redisProxy.set({ mode: 'blackhole' });
  await new Promise((r) => setTimeout(r, 1_500));
  await scanAdmin('redis unreachable', true);
  rig.redisProxy.set({ mode: 'pass' });
  rig.pgProxy.set({ mode: 'reset' });
  await new Promise((r) => setTimeout(r, 1_000));
  await scanAdmin('postgres unreachable', true);
  rig.pgProxy.set({ mode: 'pass' });
  await waitUntil(
    async () => {
      const r = await fetch(`${admin}/readyz`).catch(() => undefined);
      return r?.status === 200 ? true : undefined;
    },
    60_000,
    'the daemon to be ready again',
    500,
  );
  await scanAdmin('recovered');

  const [status, statusText, sourcesList] = await Promise.all([
    rig.run(['status', '--json'], verbose),
    rig.run(['status'], verbose),
    rig.run(['sources', 'list', '--json'], verbose),
  ]);
  expect(status.code).toBe(0);
  keep('status --json', status);
  keep('status', statusText);
  keep('sources list --json', sourcesList);
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
  // Postgres: every row of every table
  const dump = await rig.pg.dump(rig.database);
  expect(dump).toMatch(/CREATE TABLE public\.batch_items/);
  outputs.push({ where: 'pg_dump', text: dump });

  const leaks = outputs.flatMap((o) =>
    Object.entries(SECRETS)
      .filter(([, s]) => o.text.includes(s))
      .map(([name]) => `${name} in ${o.where}`),
  );
  // the admin server's last line of defence redacts the API key; a redaction is a leak it hid
  const redacted = daemon
    .logs()
    .filter((l) => l.event === 'admin.secret_redacted')
    .map((l) => `admin redaction: ${String(l.path)}`);
  const bytes = outputs.reduce((n, o) => n + o.text.length, 0);
  figures('15 secret-scan', {
    places: outputs.length,
    admin_answers: outputs.filter((o) => o.where.startsWith('admin ')).length,
    admin_jobs_seen: jobsSeen,
    item_pages: outputs.filter((o) => /^admin \/batches\/[^/]+\/items\//.test(o.where)).length,
    mb_scanned: bytes / 1e6,
    leaks: leaks.length + redacted.length,
  });
  // the scan reads what it claims to: plain text of keys, values, rows and real admin pages
  expect(rdb).toContain(`${rig.prefix}:poll`);
  expect(dump).toContain(publicVideoIds(rig.sim, ch.id)[0]!);
  expect(outputs.find((o) => o.where === 'daemon')!.text).toContain('"event":"daemon.started"');
  for (const path of ['/metrics', '/', '/admin/queues', '/admin/queues/api/queues', '/batches', '/sources/1'])
    expect(adminStatus[path], path).toBe(200);
  // raw items were among the pages scanned, and they were the real ones
  const itemPages = Object.entries(adminStatus).filter(([path]) => /^\/batches\/[^/]+\/items\//.test(path));
  expect(itemPages.length).toBeGreaterThan(0);
  for (const [path, code] of itemPages) expect(code, path).toBe(200);
  const metrics = outputs.find((o) => o.where === 'admin /metrics (after the run)')!.text;
  expect(metrics).toMatch(/^vsi_/m);
  const overview = outputs.find((o) => o.where === 'admin / (after the run)')!.text;
  expect(overview).toContain(ch.id);
  expect(scansInFlight).toBeGreaterThan(0);
  expect(jobsSeen).toBeGreaterThan(0);
  expect(
    outputs.some((o) => o.where.startsWith('admin /readyz (redis unreachable)') && /"redis":"(?!ok)/.test(o.text)),
  ).toBe(true);
  expect([...leaks, ...redacted]).toEqual([]);
});
