/**
 * Scenario 31 (issue #16): rolling upgrades. A daemon of this commit runs while a newer build
 * migrates the shared database further (played by `migrateDatabase` over a copy of migrations/
 * plus more, test/helpers/newer-build.ts: the same drizzle row and schema_compat row a newer
 * build's `migrate` writes).
 *
 * 1. One newer migration marked `-- vsi: backward-compatible`: the daemon logs `schema.newer`
 *    (scheduling: true), /readyz stays 200 and lists it, and its cron syncs still land rows.
 * 2. A second one, not marked: the daemon logs `schema.newer` (scheduling: false) and stops
 *    scheduling: cron ticks make no sync run and no API call; `status` (text and --json) and
 *    /readyz (503, `schema: 'schema-newer'`) say why.
 * 3. The state changes (a person marks it compatible in schema_compat): the daemon resumes at
 *    its next re-check, by itself.
 *
 * How it fails when the property breaks: with the gate not consulted (the `schemaBlocked()`
 * checks in src/pipeline/services/workers.ts removed), sync runs keep growing in step 2.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrateDatabase } from '../../src/db/migrate.ts';
import { syncSchedulers } from '../../src/pipeline/services/reconcile.ts';
import { createQueues } from '../../src/queues/queues.ts';
import { settle } from '../helpers/fault-checks.ts';
import { countOf, figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { newerBuildMigrations, type NewerBuild } from '../helpers/newer-build.ts';
import { freePort, waitUntil } from '../helpers/proc.ts';

const CRON = '*/3 * * * * *';
const COMPATIBLE = '0900_rolling_compatible';
const INCOMPATIBLE = '0901_rolling_incompatible';

let rig: FaultRig;
const builds: NewerBuild[] = [];
beforeAll(async () => {
  rig = await startFaultRig('31-rolling-upgrade', {
    sim: { catalog: { channels: 1, channelSizes: [200] }, jobs: { queuedMs: 100, itemsPerSecond: 2000 } },
  });
});
afterAll(async () => {
  for (const b of builds) b.remove();
  await rig?.close();
});

interface Ready {
  status: number;
  body: { checks?: Record<string, string>; newerMigrations?: string[]; reason?: string };
}
async function readyz(port: number): Promise<Ready> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as Ready['body'] };
}

it('31 a newer schema: goes on while compatible, stops scheduling and says why when not, resumes when marked', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id });
  const { sql } = rig.db();
  const port = await freePort();
  const daemon = rig.cli(['daemon', '--admin-port', String(port)], { SCHEDULE_JITTER_MS: '0' }, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const syncRuns = () => countOf(sql`select count(*)::int as n from sync_runs`);
  const apiCalls = () => rig.sim.stats().total;

  // 1. a newer build adds a compatible migration, then the source gets a cron
  const compatible = newerBuildMigrations([
    {
      tag: COMPATIBLE,
      sql: `-- vsi: backward-compatible\nCREATE TABLE IF NOT EXISTS "rolling_probe" ("id" bigint PRIMARY KEY);\n`,
    },
  ]);
  builds.push(compatible);
  expect(
    (await migrateDatabase(rig.pg.url(rig.database), undefined, { migrationsFolder: compatible.folder })).applied,
  ).toBe(1);
  const seenCompatible = await daemon.waitForLog(
    (l) => l.event === 'schema.newer',
    30_000,
    'schema.newer (compatible)',
  );
  expect(seenCompatible).toMatchObject({ newer: [COMPATIBLE], incompatible: [], scheduling: true });
  const readyCompatible = await readyz(port);
  expect(readyCompatible.status).toBe(200);
  expect(readyCompatible.body.newerMigrations).toEqual([COMPATIBLE]);

  await sql`update sources set cron = ${CRON} where id = ${source.id}`;
  const queues = createQueues(rig.redis(), rig.prefix);
  try {
    await syncSchedulers({ sql, queues });
  } finally {
    await queues.close();
  }
  const landed = await settle(rig, [source.id], 90_000);
  const wantVideos = publicVideoIds(rig.sim, ch.id).length;
  const runsWhileCompatible = await syncRuns();
  figures('31 rolling-upgrade compatible', {
    newer_migrations: 1,
    scheduling: seenCompatible.scheduling === true,
    readyz: readyCompatible.status,
    sync_runs: runsWhileCompatible,
    rows_missing: wantVideos - landed.videos,
  });
  expect(landed.videos).toBe(wantVideos);
  expect(runsWhileCompatible).toBeGreaterThan(0);

  // 2. the next newer build adds a migration it does not mark compatible
  const incompatible = newerBuildMigrations([
    {
      tag: COMPATIBLE,
      sql: `-- vsi: backward-compatible\nCREATE TABLE IF NOT EXISTS "rolling_probe" ("id" bigint PRIMARY KEY);\n`,
    },
    {
      tag: INCOMPATIBLE,
      sql: `ALTER TABLE "rolling_probe" ADD COLUMN IF NOT EXISTS "required" text NOT NULL DEFAULT '';\n`,
    },
  ]);
  builds.push(incompatible);
  expect(
    (await migrateDatabase(rig.pg.url(rig.database), undefined, { migrationsFolder: incompatible.folder })).applied,
  ).toBe(1);
  const migratedAt = Date.now();
  const stoppedLine = await daemon.waitForLog(
    (l) => l.event === 'schema.newer' && l.scheduling === false,
    30_000,
    'schema.newer (incompatible)',
  );
  expect(stoppedLine).toMatchObject({ newer: [COMPATIBLE, INCOMPATIBLE], incompatible: [INCOMPATIBLE] });
  // a sync that had already started when the verdict changed may finish; judged from then on:
  // at least 3.5 s, and until no sync run is open and a tick was blocked after the verdict (on a
  // busy machine that sync may take longer than 3.5 s)
  const blocked = () =>
    daemon.logs().filter((l) => l.event === 'schedule.schema_blocked' && l.time >= stoppedLine.time);
  const graceEnds = Date.now() + 3_500;
  await waitUntil(
    async () =>
      Date.now() >= graceEnds &&
      blocked().length > 0 &&
      (await countOf(sql`select count(*)::int as n from sync_runs where finished_at is null`)) === 0
        ? true
        : undefined,
    120_000,
    'the syncs begun before the verdict to end, and a tick blocked',
    250,
  );
  const runsAtStop = await syncRuns();
  const callsAtStop = apiCalls();
  const blockedBefore = daemon.logs().filter((l) => l.event === 'schedule.schema_blocked').length;
  // watched: at least 10 s and at least 3 blocked ticks (fewer ticks fire in 10 s on a busy machine)
  const watchEnds = Date.now() + 10_000;
  await waitUntil(
    () =>
      Date.now() >= watchEnds &&
      daemon.logs().filter((l) => l.event === 'schedule.schema_blocked').length - blockedBefore >= 3
        ? true
        : undefined,
    120_000,
    '10 s and 3 ticks blocked',
    250,
  );
  const runsDuringStop = (await syncRuns()) - runsAtStop;
  const callsDuringStop = apiCalls() - callsAtStop;
  const blockedTicks = daemon.logs().filter((l) => l.event === 'schedule.schema_blocked').length - blockedBefore;

  const stopped = await readyz(port);
  const statusJson = await rig.run(['status', '--json']);
  expect(statusJson.code, statusJson.stderr).toBe(0);
  const schema = (
    JSON.parse(statusJson.stdout) as {
      schema: { state: string; newer: { tag: string; backwardCompatible: boolean }[]; reason: string | null };
    }
  ).schema;
  const statusText = await rig.run(['status']);
  expect(statusText.code, statusText.stderr).toBe(0);

  // 3. a person marks it compatible: the daemon resumes at its next look
  await sql`update schema_compat set backward_compatible = true where tag = ${INCOMPATIBLE}`;
  const resumedLine = await daemon.waitForLog(
    (l) => l.event === 'schema.newer' && l.scheduling === true && Array.isArray(l.newer) && l.newer.length === 2,
    30_000,
    'schema.newer (marked compatible)',
  );
  const runsAtResume = await syncRuns();
  await waitUntil(
    async () => ((await syncRuns()) > runsAtResume ? true : undefined),
    30_000,
    'a sync after the mark',
    200,
  );
  const readyResumed = await readyz(port);

  figures('31 rolling-upgrade incompatible', {
    newer_migrations: 2,
    stopped_after_s: Math.max(0, stoppedLine.time - migratedAt) / 1000,
    ticks_blocked: blockedTicks,
    sync_runs_while_stopped: runsDuringStop,
    api_calls_while_stopped: callsDuringStop,
    readyz: stopped.status,
    status_state: schema.state,
    resumed_when_marked: resumedLine.scheduling === true,
    readyz_after_mark: readyResumed.status,
  });
  expect(blockedTicks).toBeGreaterThanOrEqual(2);
  expect(runsDuringStop).toBe(0);
  expect(callsDuringStop).toBe(0);
  expect(stopped.status).toBe(503);
  expect(stopped.body.checks?.schema).toBe('schema-newer');
  expect(stopped.body.reason).toMatch(/^schema-newer: .*0901_rolling_incompatible/);
  expect(stopped.body.newerMigrations).toEqual([COMPATIBLE, INCOMPATIBLE]);
  expect(schema.state).toBe('newer-incompatible');
  expect(schema.newer).toEqual([
    { tag: COMPATIBLE, createdAt: incompatible.whens[0], backwardCompatible: true },
    { tag: INCOMPATIBLE, createdAt: incompatible.whens[1], backwardCompatible: false },
  ]);
  expect(schema.reason).toContain(INCOMPATIBLE);
  expect(statusText.stdout).toContain(`SCHEDULING STOPPED`);
  expect(statusText.stdout).toContain(INCOMPATIBLE);
  expect(readyResumed.status).toBe(200);

  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
});
