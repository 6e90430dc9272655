import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../scripts/docs.ts';
import { schemaFiles, SCHEMA_FILE, TABLES_PAGE } from '../../scripts/reference/schema.ts';

describe('the schema as it is now', () => {
  it(`${SCHEMA_FILE} and ${TABLES_PAGE} are what a fresh migrate gives`, async () => {
    const files = await schemaFiles();
    expect([...files.keys()].sort()).toEqual([TABLES_PAGE, SCHEMA_FILE].sort());
    for (const [path, text] of files) {
      expect(readFileSync(join(ROOT, path), 'utf8'), `${path} is stale: run \`npm run docs\` and commit it`).toBe(text);
    }
    // the contract's tables are there, each with its columns
    const tables = files.get(TABLES_PAGE)!;
    for (const table of ['videos', 'transcripts', 'sources', 'batches', 'credit_charges']) {
      expect(tables).toContain(`## \`${table}\``);
    }
    // a trigger function redefined by later migrations appears once, as it stands
    const schema = files.get(SCHEMA_FILE)!;
    expect(schema.match(/CREATE FUNCTION public\.batch_counts_add\(/g)).toHaveLength(1);
  }, 120_000);
});
