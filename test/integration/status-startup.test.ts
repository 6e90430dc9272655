/**
 * `status` loads only what it uses (issue #34): it reads Postgres, so it starts without the
 * clients of Redis, the queues and the API, without the tracing API, the query builder and the
 * interface's schemas (it validates no answer of the upstream); `status --help` loads none of what
 * the report needs (the configuration, postgres.js, the queries); and a one-shot command on a
 * terminal loads pino-pretty only when it writes a line. A resolve hook
 * (module.register, as test/integration/tracing.test.ts does) writes down every ES module the real
 * process resolves, and a preloaded script the CommonJS ones it required (`require.cache` at exit:
 * the resolve hook does not see `require`).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectExit } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli, type CliResult } from '../helpers/pipeline.ts';

/** Packages `status` has no use for, as they appear in a resolved URL. */
const NOT_FOR_STATUS = [
  'bullmq',
  'ioredis',
  'undici',
  '@opentelemetry/',
  'drizzle-orm',
  'pino-pretty',
  '@modelcontextprotocol/',
  'hyparquet',
  'prom-client',
  'hono',
  // the tokenizer's tables: status counts passages in SQL, it cuts none
  'gpt-tokenizer',
];

let database: TestDatabase;
let dir: string;

beforeAll(async () => {
  database = await createTestDatabase('status-startup');
  // a scheduled source, so that status reads and judges a schedule as it does for most people
  await database.sql`
    insert into sources (kind, ref, external_id, max_videos, title, cron)
    values ('channel', '@startup', 'UC_startup', 10, 'Start-up channel', '0 * * * *')`;
  dir = mkdtempSync(join(tmpdir(), 'vsi-status-startup-'));
  writeFileSync(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.VSI_TEST_RESOLVED, r.url + '\\n');
  return r;
}
`,
  );
  writeFileSync(
    join(dir, 'required.cjs'),
    `process.on('exit', () => require('node:fs').appendFileSync(process.env.VSI_TEST_RESOLVED, Object.keys(require.cache).join('\\n') + '\\n'));\n`,
  );
  writeFileSync(
    join(dir, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
  );
});

afterAll(async () => {
  await database?.drop();
});

/** Runs the command with the hooks; what it printed, and every module resolved or required (URLs and paths). */
async function runRecorded(
  name: string,
  args: string[],
  env: Record<string, string>,
): Promise<CliResult & { resolved: string[] }> {
  const record = join(dir, `${name}.txt`);
  writeFileSync(record, '');
  const r = await runCli(args, {
    DATABASE_URL: database.url,
    VSI_TEST_RESOLVED: record,
    NODE_OPTIONS: `--import ${pathToFileURL(join(dir, 'register.mjs')).href} --require ${join(dir, 'required.cjs')}`,
    ...env,
  });
  return { ...r, resolved: readFileSync(record, 'utf8').split('\n').filter(Boolean) };
}

describe('status starts with what it uses', () => {
  it("prints the report without loading the clients of Redis, the queues, the API, tracing, the query builder or the interface's schemas", async () => {
    // human log lines asked for, as on a terminal: status logs none, so pino-pretty stays unloaded
    const r = await runRecorded('status', ['status'], { LOG_FORMAT: 'pretty' });
    expectExit(r, 0);
    expect(r.stdout).toContain('Sources: 1 (');
    expect(r.stdout).toContain('Start-up channel');
    // the hook saw the program's own modules (it works)
    expect(r.resolved.some((u) => /\/(src|dist)\/cli\/status\.(ts|js)$/.test(u))).toBe(true);
    const unused = NOT_FOR_STATUS.filter((p) => r.resolved.some((u) => u.includes(`/node_modules/${p}`)));
    expect(unused).toEqual([]);
    // the zod schemas of every answer of the interface (src/api/schemas.ts): status validates no
    // answer and needs only the values of a few enums (src/api/enums.ts)
    expect(r.resolved.filter((u) => /\/(src|dist)\/api\/schemas\.(ts|js)$/.test(u))).toEqual([]);
  }, 120_000);

  it('status --help loads neither the configuration, postgres.js nor the queries of status', async () => {
    const r = await runRecorded('status-help', ['status', '--help'], {});
    expectExit(r, 0);
    expect(r.stdout).toContain('--all-sources');
    expect(r.resolved.some((u) => /\/(src|dist)\/cli\/status\.(ts|js)$/.test(u))).toBe(true);
    const loaded = ['zod', 'postgres', 'cron-parser', 'pino'].filter((p) =>
      r.resolved.some((u) => u.includes(`/node_modules/${p}/`)),
    );
    expect(loaded).toEqual([]);
    const ours = r.resolved.filter((u) =>
      /\/(src|dist)\/(config|pipeline\/read\/status|cli\/db-context)\.(ts|js)$/.test(u),
    );
    expect(ours).toEqual([]);
  }, 120_000);

  it('a command that logs on a terminal still writes human lines (pino-pretty loaded at the first line)', async () => {
    const r = await runRecorded('migrate', ['migrate'], { LOG_FORMAT: 'pretty', LOG_LEVEL: 'info' });
    expectExit(r, 0);
    const lines = r.stderr.split('\n').filter((l) => l.includes('migrations applied'));
    expect(lines.length).toBe(1);
    expect(lines[0]).not.toMatch(/^\{/);
    expect(r.resolved.some((u) => u.includes('/node_modules/pino-pretty/'))).toBe(true);
  }, 120_000);
});
