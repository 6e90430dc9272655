// The least any command that reads Postgres can start in, timed by bench/startup.ts beside
// `status`: node loads postgres.js (the driver every command uses), opens one connection to
// DATABASE_URL, runs one statement and exits. Nothing of ours is loaded.
import postgres from 'postgres';

const sql = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} });
await sql`select 1`;
await sql.end();
