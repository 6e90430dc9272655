/**
 * drizzle-kit settings (tooling, not runtime): `npx drizzle-kit generate --name <what>` writes the
 * next migration under `migrations/` from `src/db/schema.ts`. The runtime applies them with
 * `videosite-ingest migrate` (src/db/migrate.ts), never with `drizzle-kit push`.
 */
import { defineConfig } from 'drizzle-kit';
import { loadConfig } from './src/config.ts';

export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema.ts',
  out: './migrations',
  dbCredentials: { url: loadConfig().databaseUrl },
  strict: true,
  verbose: true,
});
