/**
 * `node --import tsx bench/export.ts [--transcripts N] [--formats jsonl,csv,parquet] [--keep-db] [--db NAME]`:
 * `export` of a large corpus (issue #15: 1 000 000 transcripts with peak RSS < 200 MB). Seeds a
 * fresh database with N synthetic transcripts (default 1 000 000) of ~2 KB of text and ~20 timed
 * chunks each, two languages per video, in SQL (generate_series; the history and event triggers
 * are off while seeding: the export reads neither), then runs the real CLI export to a file once
 * per format (`--chunks` for JSONL and Parquet) and prints records, MB written, MB/s (file size
 * over the process's wall time, start-up and query included) and the process's peak RSS (VmHWM,
 * written as it exits: bench/peak-rss.cjs).
 *
 * `--keep-db` leaves the seeded database (its name is printed); `--db NAME` runs the exports against
 * such a database instead of seeding a new one (seeding 1 000 000 transcripts takes minutes), and
 * leaves it.
 *
 * The CLI runs compiled, from a private build under bench/results/ (the shared dist/ is left
 * alone), with the node flags of bin/videosite-ingest.js's shebang: as an installed command runs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, statSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { loadConfig } from '../src/config.ts';
import { migrateDatabase, quoteIdentifier, withDatabase } from '../src/db/migrate.ts';
import { EXPORT_FORMATS, type ExportFormat } from '../src/pipeline/commands/export.ts';
import { REPO_ROOT, shebangNodeArgs } from './procs.ts';

export const EXPORT_BENCH_TRANSCRIPTS = 1_000_000;
/** Issue #15: the export's peak RSS must stay under this, MB. */
export const EXPORT_PEAK_RSS_TARGET_MB = 200;
/** Transcripts inserted per statement while seeding. */
const SEED_STEP = 50_000;
/** Chunks per transcript, each three 32-character hex words (~98 characters): ~2 KB of text. */
const CHUNKS_PER_TRANSCRIPT = 20;
const PEAK_RSS_HOOK = join(REPO_ROOT, 'bench', 'peak-rss.cjs');
/** This run's own (two runs at once must not replace each other's build); removed at the end. */
const BUILD_DIR = join(REPO_ROOT, 'bench', 'results', `export-build-${process.pid}`);

export interface ExportFigures {
  format: ExportFormat;
  chunks: boolean;
  records: number;
  mb: number;
  wallS: number;
  mbPerS: number;
  peakRssMb: number;
}

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Compiles src/ into BUILD_DIR (tsconfig.build.json, another outDir); returns the entry to run. */
function privateBuild(): string {
  rmSync(BUILD_DIR, { recursive: true, force: true });
  mkdirSync(BUILD_DIR, { recursive: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(
    process.execPath,
    [tsc, '-p', join(REPO_ROOT, 'tsconfig.build.json'), '--outDir', join(BUILD_DIR, 'dist')],
    {
      cwd: REPO_ROOT,
      stdio: 'inherit',
    },
  );
  if (r.status !== 0) throw new Error(`bench:export: the build exited with ${r.status ?? r.signal}`);
  // dist/cli/main.js reads ../../package.json (the version)
  copyFileSync(join(REPO_ROOT, 'package.json'), join(BUILD_DIR, 'package.json'));
  const entry = join(BUILD_DIR, 'run.mjs');
  writeFileSync(entry, "import { main } from './dist/cli/main.js';\nawait main(process.argv);\n");
  return entry;
}

async function seed(sql: postgres.Sql, n: number, log: (s: string) => void): Promise<void> {
  const videos = Math.ceil(n / 2);
  await sql.begin(async (tx) => {
    // the history and change-event triggers (migrations/0010) would write a version row and an
    // event per row: the export reads neither
    await tx`set local session_replication_role = replica`;
    await tx`
      insert into videos (id, title, description, duration_s, channel_id, channel_name, tags, thumbnail, upload_date,
        view_count, like_count, transcript_languages, last_job_id)
      select 'v' || lpad(i::text, 10, '0'), 'Title ' || md5(i::text), 'Description ' || repeat(md5(i::text || 'd'), 4),
        60 + i % 3600, 'UC' || lpad((i % 1000)::text, 22, '0'), 'Channel ' || (i % 1000),
        case when i % 10 = 0 then null else array['tag' || (i % 50), 'tag' || (i % 7)] end,
        case when i % 20 = 0 then null else 'https://img.example.com/vi/' || i || '/hq.jpg' end,
        case when i % 33 = 0 then null else timestamptz '2015-01-01' + make_interval(mins => i) end,
        case when i % 30 = 0 then null else i * 7 end, case when i % 10 = 0 then null else i end,
        array['en', 'de'], 'job-bench-videos'
      from generate_series(1, ${videos}) i`;
  });
  log(`seeded ${videos} videos`);
  for (let from = 0; from < n; from += SEED_STEP) {
    const to = Math.min(n, from + SEED_STEP);
    await sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await tx`
        insert into transcripts (video_id, lang, text, chunks, available_langs, content_sha256, last_job_id, text_only)
        select 'v' || lpad((j / 2 + 1)::text, 10, '0'), case when j % 2 = 0 then 'en' else 'de' end, x.text, x.chunks,
          array['en', 'de'], encode(sha256(convert_to(x.text, 'UTF8')), 'hex'), 'job-bench-' || (j / 5000), false
        from generate_series(${from}::int, ${to - 1}::int) j
        cross join lateral (
          select string_agg(p, ' ' order by k) as text,
            jsonb_agg(jsonb_build_object('text', p, 'offset', k * 3000, 'duration', 2900) order by k) as chunks
          from (
            select k, md5(j || 'a' || k) || ' ' || md5(j || 'b' || k) || ' ' || md5(j || 'c' || k) as p
            from generate_series(1, ${CHUNKS_PER_TRANSCRIPT}) k
          ) s
        ) x`;
    });
    log(`seeded ${to}/${n} transcripts`);
  }
  await sql`analyze videos`;
  await sql`analyze transcripts`;
}

/** One export as a process; its peak RSS comes back on fd 3 as it exits. */
function runExport(
  entry: string,
  env: Record<string, string>,
  args: string[],
): Promise<{ code: number | null; stderr: string; wallS: number; peakRssMb: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--require', PEAK_RSS_HOOK, ...shebangNodeArgs(), entry, ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let kb = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => (kb += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      // fd 3 carries "peak-RSS-kB CPU-ms" (bench/peak-rss.cjs)
      resolve({
        code,
        stderr,
        wallS: (performance.now() - started) / 1000,
        peakRssMb: Number(kb.split(' ')[0]) / 1024,
      }),
    );
  });
}

export async function measureExport(opts: {
  transcripts?: number;
  formats?: readonly ExportFormat[];
  keepDb?: boolean;
  /** an already seeded database (`--keep-db` of an earlier run): not seeded, not dropped */
  db?: string;
  log?: (s: string) => void;
}): Promise<ExportFigures[]> {
  const log = opts.log ?? ((s: string) => process.stderr.write(`bench:export: ${s}\n`));
  const config = loadConfig({});
  const name = opts.db ?? `vsi_bench_export_${randomBytes(4).toString('hex')}`;
  const keepDb = opts.keepDb === true || opts.db !== undefined;
  const dbUrl = withDatabase(config.databaseUrl, name);
  const outDir = join(REPO_ROOT, 'bench', 'results', `export-${name}-${process.pid}`);
  mkdirSync(outDir, { recursive: true });
  const entry = privateBuild();
  log('built');
  if (opts.db === undefined) await migrateDatabase(dbUrl);
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
  try {
    let n = opts.transcripts ?? EXPORT_BENCH_TRANSCRIPTS;
    if (opts.db === undefined) {
      const t0 = performance.now();
      await seed(sql, n, log);
      log(`seeding took ${round((performance.now() - t0) / 1000)} s${keepDb ? `; database ${name} kept` : ''}`);
    } else {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from transcripts`;
      n = row!.n;
      log(`database ${name}: ${n} transcripts`);
    }
    const figures: ExportFigures[] = [];
    for (const format of opts.formats ?? EXPORT_FORMATS) {
      const chunks = format !== 'csv';
      const out = join(outDir, `export.${format}`);
      const args = ['export', '--format', format, '--out', out, ...(chunks ? ['--chunks'] : [])];
      const r = await runExport(entry, { DATABASE_URL: dbUrl, LOG_LEVEL: 'warn' }, args);
      if (r.code !== 0) throw new Error(`bench:export: ${args.join(' ')} exited with ${r.code}: ${r.stderr}`);
      const mb = statSync(out).size / 1e6;
      rmSync(out);
      const f = {
        format,
        chunks,
        records: n,
        mb: round(mb),
        wallS: round(r.wallS, 2),
        mbPerS: round(mb / r.wallS),
        peakRssMb: round(r.peakRssMb),
      };
      log(renderExportLine(f));
      figures.push(f);
    }
    return figures;
  } finally {
    await sql.end({ timeout: 5 });
    rmSync(outDir, { recursive: true, force: true });
    rmSync(BUILD_DIR, { recursive: true, force: true });
    if (!keepDb) {
      const admin = postgres(withDatabase(config.databaseUrl, 'postgres'), { max: 1, onnotice: () => {} });
      await admin
        .unsafe(`drop database if exists ${quoteIdentifier(name)} with (force)`)
        .finally(() => admin.end({ timeout: 5 }));
    }
  }
}

function renderExportLine(f: ExportFigures): string {
  const verdict = f.peakRssMb < EXPORT_PEAK_RSS_TARGET_MB ? 'ok' : `OVER the ${EXPORT_PEAK_RSS_TARGET_MB} MB target`;
  return `${f.format.padEnd(7)}${f.chunks ? ' --chunks' : '         '}  ${f.records} records  ${f.mb} MB in ${f.wallS} s = ${f.mbPerS} MB/s  peak RSS ${f.peakRssMb} MB (${verdict})`;
}

export function renderExport(figures: readonly ExportFigures[]): string {
  return `Export (issue #15; peak RSS target < ${EXPORT_PEAK_RSS_TARGET_MB} MB):\n${figures.map((f) => `  ${renderExportLine(f)}\n`).join('')}`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      transcripts: { type: 'string', default: String(EXPORT_BENCH_TRANSCRIPTS) },
      formats: { type: 'string', default: EXPORT_FORMATS.join(',') },
      'keep-db': { type: 'boolean', default: false },
      db: { type: 'string' },
    },
  });
  const transcripts = Number(values.transcripts);
  if (!(Number.isInteger(transcripts) && transcripts > 0))
    throw new Error('--transcripts: expected a positive integer');
  const formats = values.formats.split(',') as ExportFormat[];
  for (const f of formats)
    if (!(EXPORT_FORMATS as readonly string[]).includes(f))
      throw new Error(`--formats: "${f}" is not one of ${EXPORT_FORMATS.join(', ')}`);
  measureExport({ transcripts, formats, keepDb: values['keep-db'], db: values.db })
    .then((f) => process.stdout.write(renderExport(f)))
    .catch((e: unknown) => {
      process.stderr.write(`bench:export failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    });
}
