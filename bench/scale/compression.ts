/**
 * `node --import tsx bench/scale/compression.ts [--rounds N]`: TOAST compression of the big
 * text and jsonb columns, lz4 against pglz, on the simulator's real-sized transcripts (the
 * catalog `bench:scale` fetches them from: SIM_SEED, REAL_TRANSCRIPT_CHUNKS) and the passages
 * the indexer cuts from them. For each method: stored bytes per row (the table with its TOAST),
 * the time to store them and to read every value back (detoasted), in rounds alternating the
 * methods so that a load on the machine falls on both alike. In a scratch database, dropped after.
 */
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { loadConfig, PASSAGE_OVERLAP_TOKENS, PASSAGE_TOKENS } from '../../src/config.ts';
import { quoteIdentifier, withDatabase } from '../../src/db/migrate.ts';
import { transcriptPassages } from '../../src/db/passages.ts';
import { Catalog } from '../../src/simulator/catalog.ts';
import { CATALOG_DEFAULTS } from '../../src/simulator/options.ts';
import { LANG, REAL_TRANSCRIPT_CHUNKS, REAL_TRANSCRIPT_SAMPLE, SAMPLE_COPIES, SIM_SEED } from './settings.ts';

const METHODS = ['pglz', 'lz4'] as const;

interface Column {
  table: string;
  column: string;
  type: 'text' | 'jsonb';
  values: string[];
}

interface Figures {
  bytesPerRow: number;
  storeMs: number;
  readMs: number;
}

async function measure(sql: postgres.Sql, c: Column, method: string): Promise<Figures> {
  const t = `c_${c.table}_${c.column}_${method}`;
  await sql.unsafe(`drop table if exists ${t}`);
  await sql.unsafe(`create table ${t} (id int, v ${c.type} compression ${method})`);
  const t0 = performance.now();
  await sql.unsafe(
    `insert into ${t} select n, v::${c.type} from unnest($1::text[]) with ordinality u(v, n) cross join generate_series(1, ${SAMPLE_COPIES})`,
    [c.values],
  );
  const storeMs = performance.now() - t0;
  const t1 = performance.now();
  await sql.unsafe(`select sum(length(v::text)) from ${t}`);
  const readMs = performance.now() - t1;
  const [r] = await sql.unsafe<{ bytes: number }[]>(
    `select pg_total_relation_size('${t}')::float8 / count(*) as bytes from ${t}`,
  );
  await sql.unsafe(`drop table ${t}`);
  return { bytesPerRow: r!.bytes, storeMs, readMs };
}

/** Passage rows (text and tsvector) stored as the indexer stores them, or compressed in line (`toast_tuple_target`). */
const PASSAGE_ROWS = [
  { label: 'as now', method: 'pglz', target: null },
  { label: 'pglz, target 256', method: 'pglz', target: 256 },
  { label: 'lz4, target 256', method: 'lz4', target: 256 },
] as const;

async function measurePassageRows(
  sql: postgres.Sql,
  texts: string[],
  v: (typeof PASSAGE_ROWS)[number],
  words: string[],
): Promise<Figures> {
  const t = 'c_passage_rows';
  await sql.unsafe(`drop table if exists ${t}`);
  await sql.unsafe(
    `create table ${t} (id int, text text compression ${v.method}, tsv tsvector compression ${v.method})` +
      (v.target === null ? '' : ` with (toast_tuple_target = ${v.target})`),
  );
  await sql.unsafe(`create index on ${t} using gin (tsv)`);
  const t0 = performance.now();
  await sql.unsafe(
    `insert into ${t} select n, v, to_tsvector('english', v) from unnest($1::text[]) with ordinality u(v, n) cross join generate_series(1, ${SAMPLE_COPIES})`,
    [texts],
  );
  const storeMs = performance.now() - t0;
  await sql.unsafe(`vacuum analyze ${t}`);
  const t1 = performance.now();
  for (const w of words) {
    await sql.unsafe(
      `select id, ts_rank(tsv, q) as rank, left(text, 200) from ${t}, plainto_tsquery('english', $1) q where tsv @@ q order by rank desc limit 20`,
      [w],
    );
  }
  const readMs = performance.now() - t1;
  const [r] = await sql.unsafe<{ bytes: number }[]>(
    `select pg_total_relation_size('${t}')::float8 / count(*) as bytes from ${t}`,
  );
  await sql.unsafe(`drop table ${t}`);
  return { bytesPerRow: r!.bytes, storeMs, readMs };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
  const rounds = Number(values.rounds);
  const catalog = new Catalog({
    ...CATALOG_DEFAULTS,
    channels: 1,
    channelSizes: [REAL_TRANSCRIPT_SAMPLE],
    shortsPerChannel: 0,
    livesPerChannel: 0,
    playlistsPerChannel: 0,
    transcriptChunks: { ...REAL_TRANSCRIPT_CHUNKS },
    seed: SIM_SEED,
    platform: 'videosite',
  });
  const texts: string[] = [];
  const chunks: string[] = [];
  const passages: string[] = [];
  for (let index = 0; index < REAL_TRANSCRIPT_SAMPLE; index++) {
    const c = catalog.transcriptChunks({ channel: 0, kind: 'video', index }, LANG);
    const text = c.map((x) => x.text).join(' ');
    texts.push(text);
    chunks.push(JSON.stringify(c));
    const cut = transcriptPassages({ chunks: c, text }, { size: PASSAGE_TOKENS, overlap: PASSAGE_OVERLAP_TOKENS });
    passages.push(...cut.map((p) => p.text));
  }
  const columns: Column[] = [
    { table: 'transcripts', column: 'text', type: 'text', values: texts },
    { table: 'transcripts', column: 'chunks', type: 'jsonb', values: chunks },
    { table: 'passages', column: 'text', type: 'text', values: passages },
  ];
  // words to search for: a few of the transcripts' own, common and rare
  const all = texts
    .join(' ')
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((w) => w.length > 4);
  const words = [...new Set(all)].filter((_, i) => i % 50 === 0).slice(0, 20);
  const config = loadConfig({});
  const database = `vsi_bench_compression_${process.pid}`;
  const url = withDatabase(config.databaseUrl, database);
  const admin = postgres(withDatabase(config.databaseUrl, 'postgres'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${quoteIdentifier(database)}`);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const results = new Map<string, Figures[]>();
  try {
    for (let round = 0; round < rounds; round++) {
      for (const c of columns) {
        const order = round % 2 === 0 ? METHODS : [...METHODS].reverse();
        for (const m of order) {
          const key = `${c.table}.${c.column} ${m}`;
          results.set(key, [...(results.get(key) ?? []), await measure(sql, c, m)]);
        }
      }
      const order = round % 2 === 0 ? PASSAGE_ROWS : [...PASSAGE_ROWS].reverse();
      for (const v of order) {
        const key = `passage rows ${v.label}`;
        results.set(key, [...(results.get(key) ?? []), await measurePassageRows(sql, passages, v, words)]);
      }
    }
  } finally {
    await sql.end({ timeout: 5 });
    await admin.unsafe(`drop database if exists ${quoteIdentifier(database)} with (force)`);
    await admin.end({ timeout: 5 });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const raw = (c: Column) => c.values.reduce((n, v) => n + Buffer.byteLength(v), 0) / c.values.length;
  process.stdout.write(
    `${REAL_TRANSCRIPT_SAMPLE} transcripts x ${SAMPLE_COPIES}, ${rounds} rounds (medians)\n` +
      'column                 method  raw B/value  stored B/row  store ms  read ms\n',
  );
  for (const c of columns) {
    for (const m of METHODS) {
      const f = results.get(`${c.table}.${c.column} ${m}`)!;
      process.stdout.write(
        `${`${c.table}.${c.column}`.padEnd(22)} ${m.padEnd(7)} ${Math.round(raw(c)).toString().padStart(11)}  ` +
          `${Math.round(median(f.map((x) => x.bytesPerRow)))
            .toString()
            .padStart(12)}  ${median(f.map((x) => x.storeMs))
            .toFixed(0)
            .padStart(8)}  ${median(f.map((x) => x.readMs))
            .toFixed(0)
            .padStart(7)}\n`,
      );
    }
  }
  process.stdout.write(
    `passage rows (text, tsvector, GIN), ${words.length} searches  stored B/row  store ms  search ms\n`,
  );
  for (const v of PASSAGE_ROWS) {
    const f = results.get(`passage rows ${v.label}`)!;
    process.stdout.write(
      `${v.label.padEnd(52)} ${Math.round(median(f.map((x) => x.bytesPerRow)))
        .toString()
        .padStart(12)}  ${median(f.map((x) => x.storeMs))
        .toFixed(0)
        .padStart(8)}  ${median(f.map((x) => x.readMs))
        .toFixed(0)
        .padStart(9)}\n`,
    );
  }
}

await main();
