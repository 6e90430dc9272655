// The least `status` itself can take, timed by bench/startup.ts beside it: node loads postgres.js,
// opens one connection to DATABASE_URL and sends, in order, the statements `status` sends to that
// database (recorded by bench/startup.ts from the same database, with their parameters, into the
// JSON file named by the first argument), then exits. Nothing of ours is loaded: what this takes
// beyond bench/postgres-floor.mjs is Postgres answering `status`'s questions on a new connection.
import { readFileSync } from 'node:fs';
import postgres from 'postgres';

const statements = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const sql = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} });
for (const { query, parameters } of statements) await sql.unsafe(query, parameters, { prepare: true });
await sql.end();
