/**
 * The second crash guard of scripts/patch-postgres.mjs (porsager/postgres#1192): a connection reset
 * while postgres.js reads the array types, its first statement on every new connection, must fail
 * the waiting query (a catchable error the pipeline retries), not kill the process with an
 * unhandled rejection. Scenario 06 (Postgres SIGKILLed) met it on a busy machine: the daemon died
 * reconnecting. A child process runs the driver this checkout loads through a TCP proxy that resets
 * the first connection as soon as the driver asks for the types.
 */
import { spawn } from 'node:child_process';
import { createServer, Socket, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';

const PG_PORT = 5432;
let proxy: Server;
let resets = 0;

beforeAll(async () => {
  proxy = createServer((client) => {
    const server = new Socket();
    server.connect(PG_PORT, '127.0.0.1');
    client.on('error', () => undefined);
    server.on('error', () => client.destroy());
    server.on('data', (d) => client.write(d));
    client.on('data', (d) => {
      if (resets === 0 && d.includes('pg_catalog.pg_type')) {
        resets++;
        server.destroy();
        client.resetAndDestroy();
        return;
      }
      server.write(d);
    });
    client.on('close', () => server.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
});

const CHILD = `
import postgres from 'postgres';
const sql = postgres(process.env.URL, { max: 1, onnotice: () => undefined });
try {
  await sql\`select 1 as x\`;
  console.log('first query: answered');
} catch (e) {
  console.log('first query: ' + (e.code ?? e.message));
}
const [r] = await sql\`select array[1, 2] as xs\`;
console.log('second query: ' + JSON.stringify(r.xs));
await sql.end();
`;

it('a connection reset while the driver reads the array types fails the query, and the process lives on', async () => {
  const port = (proxy.address() as AddressInfo).port;
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], {
    cwd: new URL('../..', import.meta.url),
    env: { ...process.env, URL: `postgres://postgres@127.0.0.1:${port}/postgres` },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(resets).toBe(1);
  expect(err).not.toContain('triggerUncaughtException');
  expect(code, `${out}\n${err}`).toBe(0);
  expect(out).toContain('first query: ECONNRESET');
  // the reconnected connection read the types: an int[] comes back as an array
  expect(out).toContain('second query: [1,2]');
});
