/**
 * A hold recorded for a key nobody uses (a daemon once started with a mistyped API_KEY) does not
 * haunt `status` and the pages as a hold: they say what /readyz and /metrics say for the configured
 * key, mention the other key's refusal on a dim line, and `holds clear --key-fingerprint` forgets
 * it. A hold of the configured key is still a hold. The CLI runs as a real process.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadOverview, renderOverview } from '../../src/admin/overview.ts';
import { keyFingerprint } from '../../src/api/key-fingerprint.ts';
import { setHold } from '../../src/db/upstream-holds.ts';
import { expectExit } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/pipeline.ts';

const GOOD_KEY = 'vsi-configured-key-000000000000';
const TYPO_KEY = 'vsi-configured-key-00000000000O';
const GOOD = keyFingerprint(GOOD_KEY);
const TYPO = keyFingerprint(TYPO_KEY);

let database: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createTestDatabase('holds-other-key');
  env = { DATABASE_URL: database.url, API_KEY: GOOD_KEY };
});

beforeEach(async () => {
  await database.sql`delete from upstream_holds`;
  await setHold(database.sql, TYPO, 'unauthorized', 'the API refused the key (401)');
});

afterAll(async () => {
  await database?.drop();
});

describe("another key's hold", () => {
  it('is no ON HOLD banner in status or on the overview, only a line naming the key and the command', async () => {
    const text = await runCli(['status'], env);
    expectExit(text, 0);
    expect(text.stdout).not.toContain('ON HOLD');
    expect(text.stdout).toContain(`fingerprint ${TYPO}`);
    expect(text.stdout).toContain(`videosite-ingest holds clear --key-fingerprint ${TYPO}`);

    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as {
      upstreamHolds: unknown[];
      otherKeyHolds: { keyFingerprint: string }[];
    };
    expect(json.upstreamHolds).toEqual([]);
    expect(json.otherKeyHolds.map((h) => h.keyFingerprint)).toEqual([TYPO]);

    const page = renderOverview(await loadOverview(database.sql, { keyFingerprint: GOOD }), { queuesPath: '/queues' });
    expect(page).not.toContain('role="alert" data-hold=');
    expect(page).toContain(`data-other-key-hold="unauthorized"`);
  });

  it('is forgotten by holds clear --key-fingerprint, which says what it cleared', async () => {
    const r = await runCli(['holds', 'clear', '--key-fingerprint', TYPO], env);
    expectExit(r, 0);
    expect(r.stdout).toContain(`cleared unauthorized of key ${TYPO}`);
    expect(await database.sql`select 1 from upstream_holds`).toHaveLength(0);
    const lifted = await database.sql<{ reason: string }[]>`
      select reason from upstream_hold_events where event = 'lifted' and key_fingerprint = ${TYPO}`;
    expect(lifted.map((e) => e.reason)).toEqual(['cleared by a person: videosite-ingest holds clear']);
    expect((await runCli(['status'], env)).stdout).not.toContain(TYPO);
  });

  it("leaves the configured key's own hold a hold", async () => {
    await setHold(database.sql, GOOD, 'credits', 'no credits left');
    const text = await runCli(['status'], env);
    expect(text.stdout).toContain('ON HOLD');
    const page = renderOverview(await loadOverview(database.sql, { keyFingerprint: GOOD }), { queuesPath: '/queues' });
    expect(page).toContain('data-hold="credits"');
    expect(page).not.toContain('data-hold="unauthorized"');
    // a bad fingerprint is a usage error naming the option
    const bad = await runCli(['holds', 'clear', '--key-fingerprint', 'NOT-HEX'], env);
    expectExit(bad, 2);
    expect(bad.stderr).toContain('--key-fingerprint');
  });
});
