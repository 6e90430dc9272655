/**
 * `videosite-ingest simulator` as a person runs it: help, the listening line on stdout, the key
 * kept secret, a clean stop on SIGTERM, and usage errors.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { AccountSchema } from '../../src/api/schemas.ts';
import { SIMULATOR_DEV_API_KEY } from '../../src/config.ts';
import { call } from '../helpers/sim-http.ts';

const BIN = fileURLToPath(new URL('../../bin/videosite-ingest.js', import.meta.url));
const children: ChildProcessWithoutNullStreams[] = [];

function run(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, LOG_LEVEL: 'info', ...env } });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, out: () => stdout, err: () => stderr };
}

async function waitFor(cond: () => boolean, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

describe('simulator command', () => {
  it('--help exits 0 and lists the options', async () => {
    const p = run(['simulator', '--help']);
    expect(await p.exited).toBe(0);
    for (const flag of [
      '--port',
      '--seed',
      '--platform',
      '--api-key',
      '--items-per-second',
      '--error-rate',
      '--clock-speed',
    ]) {
      expect(p.out()).toContain(flag);
    }
  });

  it('prints where it listens, accepts the given key without printing it, and stops on SIGTERM', async () => {
    const secret = 'sk-user-secret-4242';
    const p = run(['simulator', '--port', '0', '--seed', '3', '--platform', 'vidz', '--api-key', secret]);
    await waitFor(() => p.out().includes('\n'));
    const m = /^simulator listening on (http:\/\/127\.0\.0\.1:\d+\/v1) \(platform vidz, api key (.+)\)\n$/.exec(
      p.out(),
    );
    expect(m, p.out() + p.err()).not.toBeNull();
    const baseUrl = m![1]!;
    const me = await call({ baseUrl, apiKey: secret }, 'GET', '/me');
    expect(AccountSchema.parse(me.json).plan).toBe('pro');
    expect((await call({ baseUrl, apiKey: SIMULATOR_DEV_API_KEY }, 'GET', '/me')).status).toBe(401);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(p.out() + p.err()).not.toContain(secret);
  });

  it('prints the documented development key when no key is configured', async () => {
    const p = run(['simulator', '--port', '0'], { SIMULATOR_API_KEY: '' });
    await waitFor(() => p.out().includes('\n'));
    expect(p.out()).toContain(`api key ${SIMULATOR_DEV_API_KEY}`);
    p.child.kill('SIGINT');
    const code = await p.exited;
    expect(code, p.err() + JSON.stringify(p.child.signalCode)).toBe(0);
  });

  it('a bad flag value is a usage error (exit 2)', async () => {
    const p = run(['simulator', '--port', 'abc']);
    expect(await p.exited).toBe(2);
    expect(p.err()).toContain('--port');
  });
});
