/**
 * Synthetic history, seeded entirely in SQL through the normal tables (so triggers and counters
 * the schema keeps see every row), in a few large INSERT ... SELECT statements run on two
 * connections side by side.
 *
 * The shape follows what a year of the real thing leaves behind (src/db/schema.ts):
 * - sources: channels synced hourly; source 1 is the 5 000-video channel whose incremental sync
 *   is timed, the others hold 50..~2 000 videos each (100 000 / 1 000 000 in all); every source
 *   is a channel of the simulator's catalog, and its catalog videos are among its stored ones;
 * - per source, a first backfill (one metadata and one transcript batch of all its videos), then
 *   small incremental batches (5..45 items) spread over the history; the newest are in flight,
 *   a few before them still have items landed but not sunk;
 * - items: mostly sunk with a raw payload of a few hundred bytes (metadata) to ~3 KB (a
 *   transcript of 10 chunks, stored out of line); failed (forbidden, not-found,
 *   transcript-unavailable), retryable (internal-error, limit-exceeded, unfinished), quarantined
 *   (schema, too-large) as the catalog's shares make them;
 * - videos for every public video, transcripts for the ~88% of those with captions, video_sync
 *   (metadata and transcript) as the backfill left it (nothing due: a scheduled sync lists and
 *   finds nothing to buy), source_videos, batch_submissions, one sync_runs row per source per
 *   hour, a credit snapshot every few minutes and before each submission.
 *
 * Text is cut from a corpus passed as a bytea parameter: `substring` on bytea is O(1), where on
 * text in a UTF-8 database it walks the string (measured: 32 µs against 0.5 µs per call).
 */
import { createHash } from 'node:crypto';
import type postgres from 'postgres';
import {
  CREDIT_SNAPSHOT_EVERY_MIN,
  DIFF_SOURCE_VIDEOS,
  EMBEDDED_PER_MILLE,
  EMBEDDING_DIMENSIONS,
  EMBEDDING_MODEL,
  EMBEDDING_POOL,
  HNSW_BUILD_MEMORY,
  IN_FLIGHT_BATCHES,
  INCREMENTAL_BATCH_ITEMS,
  LANG,
  SHARED_VIDEOS_PER_MILLE,
  SINK_LAGGING_BATCHES,
  SOURCE_CRON,
  SOURCE_LIST_LIMIT,
  type ScaleSpec,
} from './settings.ts';

/** What the simulator's catalog contributes: per source (index 0 = source 1), its channel and video IDs. */
export interface CatalogChannels {
  channelIds: string[];
  videoIds: string[][];
}

export interface SeedFigures {
  /** wall time of each step, ms, in the order run */
  stepsMs: Record<string, number>;
  totalMs: number;
}

const STAGE = 'scale_seed';
/** Bytes of corpus text. */
const CORPUS_BYTES = 32_768;
/** The longest cut; offsets stay this far from the corpus's end, so every cut is full length. */
const CUT_MAX = 1_200;

/** A deterministic stream of 32-bit unsigned ints (xorshift32): the same seed, the same history. */
function xorshift(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/**
 * Deterministic ASCII prose of made-up words (letters only, so cuts splice into JSON as they
 * are). Made-up, not repeated, words: lz4 finds little to compress in them, so a transcript
 * item's payload (~3 KB) is stored out of line in TOAST as a real one (~20 KB, ~9 KB compressed)
 * is, and the heap of batch_items holds what it holds for real: small rows and TOAST pointers.
 */
export function corpus(): Buffer {
  const next = xorshift(2_463_534_242);
  const letters = 'etaoinshrdlcumwfgypbvkjxqz';
  let out = '';
  let sentence = 0;
  while (out.length < CORPUS_BYTES) {
    const n = 2 + (next() % 8);
    let w = '';
    // skewed towards frequent letters, as prose is
    for (let i = 0; i < n; i++) w += letters[Math.floor(letters.length * (next() / 2 ** 32) ** 2)]!;
    if (sentence === 0) w = w[0]!.toUpperCase() + w.slice(1);
    sentence++;
    if (sentence > 6 + (next() % 9)) {
      w += next() % 5 === 0 ? '?' : '.';
      sentence = 0;
    }
    out += `${w} `;
  }
  return Buffer.from(out.slice(0, CORPUS_BYTES), 'ascii');
}

/** SQL: `len` bytes of the corpus ($1) at an offset drawn from `salt` (an int expression). */
function cut(salt: string, len: string): string {
  return `convert_from(substring($1::bytea from 1 + (hashint4(${salt}) & 2147483647) % ${CORPUS_BYTES - CUT_MAX} for least(${len}, ${CUT_MAX})), 'UTF8')`;
}

/** A pseudo-random 0..999 from an int expression and a salt. */
const permille = (expr: string, salt: number) => `(hashint4((${expr}) # ${salt}) & 2147483647) % 1000`;
/** A pseudo-random non-negative int from an int expression. */
const rand = (expr: string) => `(hashint4(${expr}) & 2147483647)`;

/** job_id of batch number `no` (the simulator's shape: `batch_<uuid>`). */
const jobIdSql = (no: string) => `'batch_' || md5('job' || (${no}))::uuid::text`;

/** The job_ids of the first backfills (a metadata and a transcript batch) of sources 1..`sources`, as jobIdSql makes them. */
export function firstBackfillJobIds(sources: number): string[] {
  return Array.from({ length: 2 * sources }, (_, i) => {
    const h = createHash('md5')
      .update(`job${i + 1}`)
      .digest('hex');
    return `batch_${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  });
}

/**
 * Per source: its number of videos. Source 1 is the diff source; the others follow a skewed
 * distribution (a few large channels, many small ones) summing to the spec's videos.
 */
export function sourceSizes(spec: ScaleSpec): number[] {
  const others = spec.sources - 1;
  const rest = spec.videos - DIFF_SOURCE_VIDEOS;
  const next = xorshift(88_172_645);
  // from 1 to e^3.5 (33) times the smallest: the largest ~1 700 videos
  const weights = Array.from({ length: others }, () => Math.exp(3.5 * (next() / 2 ** 32)));
  const sum = weights.reduce((a, b) => a + b, 0);
  const sizes = weights.map((w) => Math.max(SOURCE_LIST_LIMIT, Math.round((w / sum) * rest)));
  // the largest absorbs the rounding, so the total is exact
  const drift = rest - sizes.reduce((a, b) => a + b, 0);
  const largest = sizes.indexOf(Math.max(...sizes));
  sizes[largest] = sizes[largest]! + drift;
  return [DIFF_SOURCE_VIDEOS, ...sizes];
}

/**
 * One item's outcome class from the video's fate and transcript rolls and the item's own roll:
 * S sunk, L landed, P processing, U unfinished at the batch's end (retryable 'processing'),
 * R retryable, Q quarantined (schema), T quarantined (too large), F forbidden, N not-found,
 * X transcript-unavailable. Shares as the simulator's catalog (3% private, 3% gone, 12% without
 * captions) plus 0.8% retryable and 0.3% quarantined.
 */
function outcomeSql(o: { kind: string; fate: string; tr: string; roll: string; override?: string }): string {
  return `case
      ${o.override ?? ''}
      when ${o.roll} < 8 then 'R'
      when ${o.roll} < 10 then 'Q'
      when ${o.roll} < 11 then 'T'
      when ${o.fate} < 30 then 'F'
      when ${o.fate} < 60 then 'N'
      when ${o.kind} = 'transcript' and ${o.tr} < 120 then 'X'
      else 'S' end`;
}

const STATE_OF = `case c when 'S' then 'sunk' when 'L' then 'landed' when 'P' then 'processing'
  when 'U' then 'retryable' when 'R' then 'retryable' when 'Q' then 'quarantined' when 'T' then 'quarantined' else 'failed' end`;
const CODE_OF = `case c when 'P' then 'processing' when 'U' then 'processing'
  when 'R' then (case when roll % 2 = 0 then 'internal-error' else 'limit-exceeded' end)
  when 'F' then 'forbidden' when 'N' then 'not-found' when 'X' then 'transcript-unavailable' end`;

/** The Video resource of video `n` (id `id`, channel `ch` of source `sid`), as jsonb. */
function videoJson(n: string, id: string, ch: string, sid: string, asOf: string): string {
  return `jsonb_build_object(
    'id', ${id}, 'title', initcap(${cut(`${n} # 11`, `20 + ${n} % 60`)}),
    'description', ${cut(`${n} # 13`, `80 + ${n} % 620`)},
    'duration', 30 + (${n} * 37) % 3600,
    'channel', jsonb_build_object('id', ${ch}, 'name', 'Channel ' || ${sid}),
    'tags', jsonb_build_array(${cut(`${n} # 17`, '7')}, ${cut(`${n} # 19`, '9')}, ${cut(`${n} # 23`, '12')}),
    'thumbnail', 'https://img.videosite.com/vi/' || ${id} || '/hqdefault.jpg',
    'uploadDate', to_char((${asOf} - make_interval(days => 30 + ${n} % 2000)) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'viewCount', ${rand(`${n} # 29`)} % 5000000,
    'likeCount', ${rand(`${n} # 31`)} % 100000,
    'transcriptLanguages', case when ${permille(n, 0x5bd1)} < 120 then '[]'::jsonb else '["${LANG}"]'::jsonb end)`;
}

/** Chunks of a transcript item's payload (180..300 characters each: ~3 KB of JSON). */
const CHUNKS = 10;
/**
 * Chunks of a `transcripts` row: its first 5, ~2.6 KB with its text. The row is read by its key
 * only (index-only scans), so its size matters to the room it takes, which the projection scales
 * to real transcripts; fewer bytes keep the 10x seed within minutes.
 */
const ROW_CHUNKS = 5;
/** The chunk texts of video `n`'s transcript, as columns c1..c10 of a lateral subquery. */
function chunkTextsLateral(n: string, when = 'true', count = CHUNKS): string {
  const cols = Array.from(
    { length: count },
    (_, k) => `${cut(`${n} * ${CHUNKS} + ${k}`, `180 + (${n} * ${k + 3}) % 120`)} as c${k + 1}`,
  );
  // offset 0: computed once per row, not once per reference; only for the rows that need them
  return `left join lateral (select ${cols.join(', ')} where ${when} offset 0) ct on true`;
}
function chunksJson(count = CHUNKS): string {
  const parts = Array.from(
    { length: count },
    (_, k) =>
      `jsonb_build_object('text', ct.c${k + 1}, 'offset', ${k * 4_100}, 'duration', 3900 + length(ct.c${k + 1}))`,
  );
  return `jsonb_build_array(${parts.join(', ')})`;
}
const chunksText = (count: number) =>
  `concat_ws(' ', ${Array.from({ length: count }, (_, k) => `ct.c${k + 1}`).join(', ')})`;

interface Step {
  name: string;
  /** the table it fills */
  table?: string;
  sql: string;
  /** the statement takes the corpus as $1 */
  corpus?: boolean;
}

/** Websites beside the channels: one per WEBSITE_EVERY sources, each of PAGES_PER_SITE pages. */
const WEBSITE_EVERY = 20;
const PAGES_PER_SITE = 1_000;
/** Pages whose content changed once since their first crawl (a second version), per mille. */
const CHANGED_PAGES_PER_MILLE = 100;

/**
 * The web pages of the history (issue #29), for a tree that has them: `spec.sources / 20`
 * website sources of 1 000 pages each (10 000 pages at 1x, 100 000 at 10x), each crawled once
 * (its crawl a `batches` row, its pages `batch_items` keyed by URL), with ~4 KB Markdown pages of
 * four sections, their search index (their passages since migrations/0032, `page_sections`
 * before), one version each (a tenth two),
 * `source_pages`, and one `page.added` event per page.
 */
function pageSteps(spec: ScaleSpec, sectionsKept: boolean): Step[] {
  const sites = Math.max(1, Math.floor(spec.sources / WEBSITE_EVERY));
  const site = (k: string) => `'https://site' || ${k} || '.example'`;
  const job = (k: string) => `'crawl_' || md5('crawl' || ${k})::uuid::text`;
  const pageUrl = `${site('w.k')} || '/docs/page-' || g.i`;
  const content = `'# Page ' || g.i || E'\\n\\n' || ${cut('w.k * 100003 + g.i', '900')} || E'\\n\\n## Install\\n\\n' || ${cut('w.k * 100019 + g.i', '1000')}
    || E'\\n\\n## Configure\\n\\n' || ${cut('w.k * 100043 + g.i', '1000')} || E'\\n\\n## Troubleshooting\\n\\n' || ${cut('w.k * 100057 + g.i', '1000')}`;
  return [
    {
      name: 'web: sources and crawls',
      sql: `with w as (select k, (select max(id) from sources) + k as id from generate_series(1, ${sites}) k),
        s as (insert into sources (id, kind, ref, external_id, max_videos, langs, text_only, cron, paused, last_synced_at, title)
          overriding system value
          select w.id, 'website', ${site('w.k')} || '/', ${site('w.k')} || '/', ${PAGES_PER_SITE}, '{}', false, '${SOURCE_CRON}', false,
            now() - interval '1 hour', ${site('w.k')}
          from w returning id)
        insert into batches (job_id, source_id, kind, lang, mode, status, total, succeeded, failed, credits_estimated,
            submitted_at, completed_at, terminal_at, polls, request)
          select ${job('w.k')}, w.id, 'page', null, 'crawl', 'completed', ${PAGES_PER_SITE}, ${PAGES_PER_SITE}, 0, ${1 + PAGES_PER_SITE},
            now() - interval '2 hours', now() - interval '2 hours', now() - interval '2 hours', 5,
            jsonb_build_object('url', ${site('w.k')} || '/', 'limit', ${PAGES_PER_SITE})
          from w;
        select setval(pg_get_serial_sequence('sources', 'id'), (select max(id) from sources))`,
    },
    {
      name: 'web: stage pages',
      corpus: true,
      sql: `create unlogged table ${STAGE}.pg as
        select w.k, s.id as source_id, g.i, ${pageUrl} as url, ${content} as content
        from generate_series(1, ${sites}) w(k)
        join sources s on s.kind = 'website' and s.external_id = ${site('w.k')} || '/'
        cross join generate_series(1, ${PAGES_PER_SITE}) g(i)`,
    },
    {
      name: 'web: pages',
      table: 'pages',
      sql: `insert into pages (url, name, description, og_url, content, count_characters, content_sha256, first_seen_at, last_seen_at,
          updated_at, job_id, source_id)
        select url, 'Page ' || i, 'About page ' || i, url, content, length(content), encode(sha256(convert_to(content, 'UTF8')), 'hex'),
          now() - interval '2 hours', now() - interval '2 hours', now() - interval '2 hours', ${job('k')}, source_id
        from ${STAGE}.pg`,
    },
    {
      // since migrations/0033 page_versions is a view: its INSERT trigger stores the current
      // version without a copy of the page's content, as the landing does
      name: 'web: page_versions, source_pages',
      table: 'page_versions',
      sql: `insert into page_versions (url, content_sha256, name, description, og_url, content, count_characters, stored_at, job_id)
          select url, encode(sha256(convert_to(content, 'UTF8')), 'hex'), 'Page ' || i, 'About page ' || i, url, content, length(content),
            now() - interval '2 hours', ${job('k')}
          from ${STAGE}.pg
          union all
          select url, md5(url) || md5(url), 'Page ' || i, 'About page ' || i, url, content || ' (an older version)', length(content) + 21,
            now() - interval '30 days', ${job('k')}
          from ${STAGE}.pg where ${permille('i * 31 + k', 0x77)} < ${CHANGED_PAGES_PER_MILLE};
        insert into source_pages (source_id, url, first_seen_at, last_seen_at)
          select source_id, url, now() - interval '2 hours', now() - interval '2 hours' from ${STAGE}.pg`,
    },
    {
      // not under the replica role: the counters' triggers (batch_item_counts, item_counts) must count them
      name: 'web: crawl items',
      sql: `insert into batch_items (job_id, video_id, state, payload, landed_at, sunk_at)
        select ${job('k')}, url, 'sunk', jsonb_build_object('url', url, 'content', content, 'name', 'Page ' || i,
            'description', 'About page ' || i, 'ogUrl', url, 'countCharacters', length(content)),
          now() - interval '2 hours', now() - interval '2 hours'
        from ${STAGE}.pg`,
    },
    {
      // not under the replica role: the trigger that assigns event ids must run
      name: 'web: page events',
      sql: `insert into events (type, source_id, data)
        select 'page.added', source_id, jsonb_build_object('url', url, 'sourceId', source_id, 'jobId', ${job('k')})
        from ${STAGE}.pg order by k, i`,
    },
    sectionsKept ? pageSectionsStep() : pagePassagesStep(),
  ];
}

/** The seeded pages' sections: each cut at its `## ` headings, with its headings and anchor. */
const SEEDED_SECTIONS = `select (o - 1)::int as n, case when o = 1 then array['Page ' || p.i] else array['Page ' || p.i, h] end as headings,
    case when o = 1 then 'page-' || p.i else lower(h) end as anchor, part as text
  from unnest(regexp_split_to_array(p.content, E'\\n\\n## ')) with ordinality as x(part, o)
  left join lateral (select split_part(part, E'\\n', 1) as h) hh on true`;

/** The search index of pages before migrations/0032: `page_sections`. */
function pageSectionsStep(): Step {
  return {
    name: 'web: page_sections (the search index of pages)',
    table: 'page_sections',
    sql: `insert into page_sections (url, n, headings, anchor, text, tsv)
      select p.url, s.n, s.headings, s.anchor, s.text, to_tsvector('simple', s.text)
      from ${STAGE}.pg p cross join lateral (${SEEDED_SECTIONS}) s`,
  };
}

/**
 * The search index of pages since migrations/0032: their passages, in SQL as passagesStep cuts
 * transcripts' (the cutter in Node would take minutes at 10x): each section in pieces of at most
 * 400 characters every 350 (~256 tokens of the seed's text, the next repeating the last ~50
 * characters), at word boundaries, numbered through the page; the configuration and tsvector
 * come from the passages' trigger.
 */
function pagePassagesStep(): Step {
  return {
    name: 'web: page passages (the search index of pages)',
    sql: `insert into passages (kind, doc, lang, n, text, tokens, sha256, headings, anchor)
      select 'page', x.url, '', (row_number() over (partition by x.url order by x.section, x.k) - 1)::int, x.text,
        length(x.text) * 10 / 16, encode(sha256(convert_to(x.text, 'UTF8')), 'hex'), x.headings, x.anchor
      from (
        select p.url, s.n as section, k.k, s.headings, s.anchor,
          regexp_replace(regexp_replace(substring(s.text from k.k * 350 + 1 for 400),
            case when k.k > 0 then '^\\S*\\s+' else '^$' end, ''),
            case when k.k * 350 + 400 < length(s.text) then '\\s+\\S*$' else '^$' end, '') as text
        from ${STAGE}.pg p cross join lateral (${SEEDED_SECTIONS}) s
        cross join lateral generate_series(0, greatest(0, ceil((length(s.text) - 400) / 350.0)::int)) as k(k)
      ) x`,
  };
}

/** The staging tables (schema scale_seed, dropped at the end) every insert reads from. */
function stagingSteps(): Step[] {
  return [
    {
      name: 'stage videos',
      sql: `create unlogged table ${STAGE}.vid as
        select s.first_n + p as n, coalesce(c.video_id, substr(md5('v' || (s.first_n + p)), 1, 11)) as id,
          s.id as source_id, p as pos, s.channel_id,
          ${permille('s.first_n + p', 0x5bd1e995)} as fate, ${permille('s.first_n + p', 0x5bd1)} as tr,
          ${permille('2 * (s.first_n + p)', 0x2f6b)} as roll_v, ${permille('2 * (s.first_n + p) + 1', 0x2f6b)} as roll_t
        from ${STAGE}.src s cross join generate_series(0, s.n_videos - 1) p
        left join ${STAGE}.cat c on c.source_id = s.id and c.pos = p;
        alter table ${STAGE}.vid add primary key (n);
        analyze ${STAGE}.vid`,
    },
    {
      name: 'stage batches',
      sql: `create unlogged table ${STAGE}.bat as
        with b as (
          select 2 * s.id - 1 + k as job_no, s.id as source_id,
            (array['video', 'transcript'])[k + 1] as kind, s.n_videos as size, 0 as off,
            s.created_at + interval '1 minute' as submitted_at, 'completed' as status, 'backfill' as phase, 0 as j
          from ${STAGE}.src s cross join generate_series(0, 1) k
          union all
          select 2 * p.sources + j, 2 + ${rand('j')} % (p.sources - 1),
            case when ${permille('j', 7)} < 600 then 'transcript' else 'video' end,
            ${INCREMENTAL_BATCH_ITEMS.min} + ${rand('j # 11')} % ${INCREMENTAL_BATCH_ITEMS.max - INCREMENTAL_BATCH_ITEMS.min + 1},
            ${rand('j # 13')},
            case when j > p.batches - ${IN_FLIGHT_BATCHES} then p.as_of - (p.batches - j + 1) * interval '30 seconds'
              else p.t0 + interval '1 day' + (p.as_of - p.t0 - interval '1 day 1 hour') * (j - 1) / (p.batches - ${IN_FLIGHT_BATCHES}) end,
            case when j > p.batches - ${IN_FLIGHT_BATCHES} then (array['submitted', 'queued', 'active'])[1 + j % 3]
              when ${permille('j', 17)} < 10 then 'failed' when ${permille('j', 17)} < 15 then 'expired' else 'completed' end,
            case when j > p.batches - ${IN_FLIGHT_BATCHES} then 'in-flight'
              when j > p.batches - ${IN_FLIGHT_BATCHES + SINK_LAGGING_BATCHES} then 'lagging' else 'incremental' end,
            j
          from ${STAGE}.params p cross join generate_series(1, p.batches) j
        )
        select b.*, ${jobIdSql('b.job_no')} as job_id from b;
        alter table ${STAGE}.bat add primary key (job_no);
        create unlogged table ${STAGE}.inc as
          select b.job_no, m, s.first_n + ((b.off % s.n_videos + m) % s.n_videos) as n
          from ${STAGE}.bat b join ${STAGE}.src s on s.id = b.source_id cross join generate_series(0, b.size - 1) m
          where b.phase <> 'backfill';
        analyze ${STAGE}.bat; analyze ${STAGE}.inc`,
    },
  ];
}

/** Statements that must run before the two lanes (the lanes' rows reference these). */
function headSteps(): Step[] {
  return [
    {
      name: 'sources',
      table: 'sources',
      sql: `insert into sources (id, kind, ref, external_id, max_videos, langs, text_only, cron, paused, last_synced_at,
          title, created_at, updated_at, last_error, last_error_code, last_error_at)
        overriding system value
        select s.id, 'channel', s.channel_id, s.channel_id, case when s.id = 1 then s.n_videos else ${SOURCE_LIST_LIMIT} end,
          '{${LANG}}', false, '${SOURCE_CRON}', false, p.as_of - make_interval(mins => s.id % 55),
          'Channel ' || s.id, s.created_at, p.as_of - make_interval(mins => s.id % 55),
          case when s.id % 50 = 7 then 'fetch failed: other side closed' end,
          case when s.id % 50 = 7 then 'network' end,
          case when s.id % 50 = 7 then p.as_of - make_interval(hours => s.id % 20) end
        from ${STAGE}.src s cross join ${STAGE}.params p;
        select setval(pg_get_serial_sequence('sources', 'id'), (select max(id) from sources))`,
    },
    {
      name: 'channels',
      table: 'channels',
      corpus: true,
      // fetched within the day: a sync does not refresh them (SOURCE_METADATA_REFRESH_MS)
      sql: `insert into channels (id, name, handle, description, subscriber_count, video_count, view_count, thumbnail, banner, raw, fetched_at, updated_at)
        select s.channel_id, 'Channel ' || s.id, '@channel' || s.id, ${cut('s.id # 41', '200 + s.id % 300')},
          1000 + ${rand('s.id')} % 1000000, s.n_videos, ${rand('s.id # 43')} % 100000000,
          'https://img.videosite.com/ch/' || s.channel_id || '.jpg', 'https://img.videosite.com/banner/' || s.channel_id || '.jpg',
          jsonb_build_object('id', s.channel_id, 'name', 'Channel ' || s.id, 'handle', '@channel' || s.id, 'videoCount', s.n_videos),
          p.as_of - make_interval(hours => s.id % 20), p.as_of - make_interval(hours => s.id % 20)
        from ${STAGE}.src s cross join ${STAGE}.params p`,
    },
    {
      name: 'batches',
      table: 'batches',
      sql: `with ids as (
          select source_id, jsonb_agg(id order by pos) as ids from ${STAGE}.vid group by source_id
        ), inc_ids as (
          select i.job_no, jsonb_agg(v.id order by i.m) as ids from ${STAGE}.inc i join ${STAGE}.vid v on v.n = i.n group by i.job_no
        )
        insert into batches (job_id, source_id, kind, lang, status, error_code, total, succeeded, failed, credits_estimated,
          submitted_at, completed_at, polls, request, text_only, last_polled_at, next_poll_at, terminal_at, updated_at,
          upstream_status, reason, mode)
        select b.job_id, b.source_id, b.kind, case when b.kind = 'transcript' then '${LANG}' end, b.status,
          case when b.status = 'expired' then 'job-expired' end,
          case when b.status in ('submitted', 'queued') then null else b.size end,
          case when b.status in ('submitted', 'queued') then null when b.status = 'active' then b.size / 3
            when b.status = 'completed' then b.size - b.size * 7 / 100 else b.size / 2 - b.size * 7 / 200 end,
          case when b.status in ('submitted', 'queued') then null else b.size * 7 / 100 end,
          1 + b.size, b.submitted_at,
          case when b.phase <> 'in-flight' then b.submitted_at + make_interval(secs => 20 + b.size / 50) end,
          case when b.phase = 'in-flight' then 1 + b.j % 3 else 3 + b.size / 500 end,
          jsonb_build_object('videoIds', coalesce(ids.ids, inc_ids.ids))
            || case when b.kind = 'transcript' then '{"lang": "${LANG}"}'::jsonb else '{}'::jsonb end,
          false,
          case when b.status <> 'submitted' then b.submitted_at + make_interval(secs => 20 + b.size / 50) end,
          case when b.phase = 'in-flight' then p.as_of + interval '5 seconds' end,
          case when b.phase <> 'in-flight' then b.submitted_at + make_interval(secs => 25 + b.size / 50) end,
          b.submitted_at + make_interval(secs => 25 + b.size / 50),
          case when b.status = 'submitted' then null when b.status = 'expired' then 'failed' else b.status end,
          case when b.status = 'failed' then 'the upstream failed the batch partway' end,
          'batch'
        from ${STAGE}.bat b cross join ${STAGE}.params p
        left join ids on b.phase = 'backfill' and ids.source_id = b.source_id
        left join inc_ids on inc_ids.job_no = b.job_no`,
    },
    {
      name: 'batch_submissions',
      table: 'batch_submissions',
      sql: `insert into batch_submissions (source_id, kind, lang, request, credits_estimated, used_credits_before, state, job_id, created_at, updated_at)
        select source_id, kind, lang, request, credits_estimated, 0, 'submitted', job_id, submitted_at - interval '1 second', submitted_at
        from batches order by submitted_at`,
    },
  ];
}

/** batch_items of the first backfills, then of the incremental batches. */
function itemSteps(): Step[] {
  const payload = (n: string, id: string, ch: string, sid: string) => `case
      when c in ('S', 'L') then (case when kind = 'video'
        then jsonb_build_object('videoId', ${id}, 'video', ${videoJson(n, id, ch, sid, 'p.as_of')})
        else jsonb_build_object('videoId', ${id}, 'transcript', jsonb_build_object('content', ${chunksJson()}, 'lang', '${LANG}', 'availableLangs', '["${LANG}"]'::jsonb)) end)
      when c = 'Q' then jsonb_build_object('videoId', ${id}, kind, jsonb_build_object('id', ${id}, 'duration', 'PT4M13S'))
      when c = 'T' then null
      else jsonb_build_object('videoId', ${id}, 'errorCode', ${CODE_OF}) end`;
  const columns = `(job_id, video_id, state, error_code, payload, payload_raw, landed_at, sunk_at, reason, resubmitted_in, updated_at, reason_code)`;
  const rest = (id: string, n: string) => `${STATE_OF}, ${CODE_OF},
      ${payload(n, id, 'channel_id', 'source_id')},
      case when c = 'T' then '{"videoId":"' || ${id} || '","transcript":{"content":[{"text":"' || ${cut(`${n} # 53`, '1000')} end,
      case when c not in ('P') then done_at end,
      case when c = 'S' then done_at + interval '3 seconds' end,
      case when c = 'Q' then 'item does not match the interface at ' || kind || '.duration: Invalid input: expected number, received string'
        when c = 'T' then 'item larger than ITEM_MAX_BYTES: kept unparsed, its first bytes' end,
      case when c = 'R' and roll < 6 then ${jobIdSql(`'resubmit' || ${n}`)} end,
      coalesce(done_at + case when c = 'S' then interval '3 seconds' else interval '0 seconds' end, p.as_of),
      case when c = 'Q' then 'schema' when c = 'T' then 'too-large' end`;
  return [
    ...(['video', 'transcript'] as const).map((kind, k) => ({
      name: `batch_items (first backfills, ${kind})`,
      table: 'batch_items',
      corpus: true,
      sql: `insert into batch_items ${columns}
        select job_id, id, ${rest('id', 'n')}
        from (
          select b.job_id, b.kind, v.n, v.id, v.source_id, v.channel_id,
            case when b.kind = 'video' then v.roll_v else v.roll_t end as roll,
            b.submitted_at + make_interval(secs => 20) + v.pos * interval '10 milliseconds' as done_at,
            ${outcomeSql({ kind: 'b.kind', fate: 'v.fate', tr: 'v.tr', roll: `case when b.kind = 'video' then v.roll_v else v.roll_t end` })} as c
          from ${STAGE}.vid v join ${STAGE}.bat b on b.job_no = 2 * v.source_id - ${1 - k}
        ) x cross join ${STAGE}.params p ${chunkTextsLateral('x.n', "x.kind = 'transcript' and x.c in ('S', 'L')")}`,
    })),
    {
      name: 'batch_items (incremental)',
      table: 'batch_items',
      corpus: true,
      sql: `insert into batch_items ${columns}
        select job_id, id, ${rest('id', 'n')}
        from (
          select b.job_id, b.kind, v.n, v.id, v.source_id, v.channel_id, ${permille('v.n * 64 + b.j % 64', 0x3c1)} as roll,
            case when b.status in ('submitted', 'queued') or (b.status = 'active' and i.m >= b.size / 2) then null
              else b.submitted_at + make_interval(secs => 20) + i.m * interval '10 milliseconds' end as done_at,
            ${outcomeSql({
              kind: 'b.kind',
              fate: 'v.fate',
              tr: 'v.tr',
              roll: permille('v.n * 64 + b.j % 64', 0x3c1),
              override: `when b.status in ('submitted', 'queued') then 'P'
                when b.status = 'active' and i.m >= b.size / 2 then 'P'
                when b.status = 'active' and i.m >= b.size / 3 then 'L'
                when b.phase = 'lagging' and i.m % 2 = 0 then 'L'
                when b.status in ('failed', 'expired') and i.m >= b.size / 2 then 'U'`,
            })} as c
          from ${STAGE}.inc i join ${STAGE}.bat b on b.job_no = i.job_no join ${STAGE}.vid v on v.n = i.n
        ) x cross join ${STAGE}.params p ${chunkTextsLateral('x.n', "x.kind = 'transcript' and x.c in ('S', 'L')")}`,
    },
  ];
}

/** Everything else: rows the sink, the scheduler and the credit guard left. */
function otherSteps(): Step[] {
  const backfillJob = (k: 0 | 1) => jobIdSql(`2 * v.source_id - ${1 - k}`);
  return [
    {
      name: 'videos',
      table: 'videos',
      corpus: true,
      sql: `insert into videos (id, title, description, duration_s, channel_id, channel_name, tags, thumbnail, upload_date,
          view_count, like_count, transcript_languages, first_seen_at, updated_at, last_job_id)
        select j->>'id', j->>'title', j->>'description', (j->>'duration')::float8, v.channel_id, 'Channel ' || v.source_id,
          array(select jsonb_array_elements_text(j->'tags')), j->>'thumbnail', (j->>'uploadDate')::timestamptz,
          (j->>'viewCount')::bigint, (j->>'likeCount')::bigint, array(select jsonb_array_elements_text(j->'transcriptLanguages')),
          s.created_at + interval '2 minutes', s.created_at + interval '2 minutes', ${backfillJob(0)}
        from ${STAGE}.vid v join ${STAGE}.src s on s.id = v.source_id cross join ${STAGE}.params p
        cross join lateral (select ${videoJson('v.n', 'v.id', 'v.channel_id', 'v.source_id', 'p.as_of')} as j offset 0) vj
        where v.fate >= 60`,
    },
    {
      name: 'transcripts',
      table: 'transcripts',
      corpus: true,
      sql: `insert into transcripts (video_id, lang, text, chunks, available_langs, content_sha256, updated_at, first_seen_at, last_job_id, text_only, origin)
        select v.id, '${LANG}', ${chunksText(ROW_CHUNKS)}, ${chunksJson(ROW_CHUNKS)}, '{${LANG}}', md5('t' || v.n) || md5('u' || v.n),
          s.created_at + interval '2 minutes', s.created_at + interval '2 minutes', ${backfillJob(1)}, false, 'captions'
        from ${STAGE}.vid v join ${STAGE}.src s on s.id = v.source_id ${chunkTextsLateral('v.n', 'true', ROW_CHUNKS)}
        where v.fate >= 60 and v.tr >= 120`,
    },
    {
      name: 'video_sync',
      table: 'video_sync',
      // as the backfill left it; a retryable video has used its attempts (RETRY_ATTEMPTS_MAX, 3),
      // a missing transcript is re-checked within the week: nothing is due
      sql: `insert into video_sync (video_id, kind, lang, last_job_id, last_state, last_error_code, attempts, next_check_at, updated_at, text_only,
          delivered_lang)
        select x.id, x.kind, x.lang, x.job_id, ${STATE_OF}, ${CODE_OF}, case when c = 'R' then 3 else 1 end,
          case when c = 'X' then p.as_of + make_interval(days => 1 + x.n % 7) end, s.created_at + interval '2 minutes', false,
          case when x.kind = 'transcript' and c = 'S' then '${LANG}' end
        from (
          select v.n, v.id, v.source_id, k.kind, k.lang, ${jobIdSql('2 * v.source_id - 1 + k.k')} as job_id,
            case when k.k = 0 then v.roll_v else v.roll_t end as roll,
            ${outcomeSql({ kind: 'k.kind', fate: 'v.fate', tr: 'v.tr', roll: 'case when k.k = 0 then v.roll_v else v.roll_t end' })} as c
          from ${STAGE}.vid v cross join (values (0, 'video', ''), (1, 'transcript', '${LANG}')) k(k, kind, lang)
        ) x join ${STAGE}.src s on s.id = x.source_id cross join ${STAGE}.params p`,
    },
    {
      name: 'source_videos',
      table: 'source_videos',
      sql: `insert into source_videos (source_id, video_id, first_seen_at, last_listed_at)
        select v.source_id, v.id, s.created_at + v.pos * interval '1 millisecond',
          case when v.pos < s.list_limit then p.as_of - interval '1 hour' else s.created_at end
        from ${STAGE}.vid v join ${STAGE}.src s on s.id = v.source_id cross join ${STAGE}.params p
        union all
        select 2 + (v.source_id - 1) % (p.sources - 1), v.id, p.as_of - make_interval(days => v.n % 20), null
        from ${STAGE}.vid v cross join ${STAGE}.params p
        where v.source_id > 1 and ${permille('v.n', 0x61)} < ${SHARED_VIDEOS_PER_MILLE}`,
    },
    ...(['older', 'newer'] as const).map((half, h) => ({
      name: `sync_runs (${half} half)`,
      table: 'sync_runs',
      // hour by hour, every source in it: rows arrive in time order, as they do for real; the
      // halves in two lanes touch different ends of the indexes
      sql: `insert into sync_runs (source_id, started_at, finished_at, outcome, detail, videos_listed, videos_submitted,
          credits_estimated, job_ids, listing_credits)
        select s.id, t.h + s.stagger, t.h + s.stagger + make_interval(secs => 0.2 + (${rand('s.id # t.k')} % 1800) / 1000.0),
          case when r < 2 then 'error' when r < 30 then 'submitted' else 'up-to-date' end,
          case when r < 2 then 'fetch failed: other side closed' end,
          s.list_limit,
          case when r < 2 then 0 when r < 30 then 5 + r else 0 end,
          case when r < 2 then 0 when r < 30 then 6 + r else 0 end,
          case when r >= 2 and r < 30 then array[${jobIdSql(`'run' || s.id || '-' || t.k`)}] else '{}'::text[] end,
          1
        from ${STAGE}.params p
        cross join lateral (select h, k::int from generate_series(p.t0 + interval '1 hour', p.as_of - interval '1 hour', interval '1 hour') with ordinality g(h, k)) t
        cross join ${STAGE}.src s
        cross join lateral (select ${permille('s.id * 100003 + t.k', 0x77)} as r offset 0) rr
        where (t.h < p.t0 + (p.as_of - p.t0) / 2) = ${h === 0}`,
    })),
    {
      name: 'credit_snapshots',
      table: 'credit_snapshots',
      sql: `insert into credit_snapshots (taken_at, organization_id, plan, max_credits, used_credits, reason, source_id)
        select t, 'org_bench', 'pro', 100000000,
          (extract(epoch from t - p.t0) / extract(epoch from p.as_of - p.t0) * p.credits_spent)::bigint, r, sid
        from (
          select g as t, 'hold-recheck' as r, null::int as sid
          from ${STAGE}.params p0, generate_series(p0.t0, p0.as_of, make_interval(mins => ${CREDIT_SNAPSHOT_EVERY_MIN})) g
          union all
          select submitted_at - interval '2 seconds', 'before-submit', source_id from ${STAGE}.bat
        ) x cross join ${STAGE}.params p
        order by t`,
    },
  ];
}

/**
 * Tables a step may fill without firing the foreign-key checks, one per row (half the time of
 * 17 M sync runs): those with no trigger of their own, when the role may skip them (a
 * superuser's `session_replication_role = replica`). The seed's keys hold by construction; a
 * table with a trigger (the counters of migrations/0005) always fires it.
 */
async function triggerFreeTables(sql: postgres.Sql): Promise<Set<string>> {
  const [role] = await sql<
    { superuser: boolean }[]
  >`select rolsuper as superuser from pg_roles where rolname = current_user`;
  if (!role?.superuser) return new Set();
  const rows = await sql<{ t: string }[]>`
    select c.relname as t from pg_class c
    where c.relkind = 'r' and c.relnamespace = current_schema()::regnamespace
      and not exists (select 1 from pg_trigger g where g.tgrelid = c.oid and not g.tgisinternal)`;
  return new Set(rows.map((r) => r.t));
}

/** The history triggers (migrations/0010), where the schema under test has them. */
const HISTORY_TRIGGERS = ['videos_added', 'videos_changed', 'transcripts_added', 'transcripts_changed'];

async function setHistoryTriggers(sql: postgres.Sql, enabled: boolean): Promise<void> {
  const rows = await sql<{ tgname: string; rel: string }[]>`
    select tgname, tgrelid::regclass::text as rel from pg_trigger where tgname = any(${HISTORY_TRIGGERS}::text[])`;
  for (const r of rows) await sql.unsafe(`alter table ${r.rel} ${enabled ? 'enable' : 'disable'} trigger ${r.tgname}`);
}

/** One step in its own transaction (a big insert commits once), timed. */
async function runStep(
  sql: postgres.Sql,
  step: Step,
  corpusBytes: Buffer,
  skipKeyChecks: Set<string>,
  figures: SeedFigures,
  say: (line: string) => void,
): Promise<void> {
  const started = Date.now();
  await sql.begin(async (tx) => {
    // nothing here needs durability before the end: an interrupted seed's database is dropped
    await tx.unsafe(`set local synchronous_commit = off; set local work_mem = '256MB'; set local jit = off`);
    if (step.table && skipKeyChecks.has(step.table)) await tx.unsafe(`set local session_replication_role = replica`);
    await tx.unsafe(step.sql, step.corpus ? [corpusBytes] : []);
  });
  const ms = Date.now() - started;
  figures.stepsMs[step.name] = ms;
  say(`seed: ${step.name} ${(ms / 1000).toFixed(1)} s`);
}

/**
 * Seed `spec`'s history into a migrated, empty database; two connections of `sql` carry two
 * lanes of inserts side by side. Every timestamp is relative to the seeding's start.
 */
export async function seedHistory(
  sql: postgres.Sql,
  spec: ScaleSpec,
  catalog: CatalogChannels,
  say: (line: string) => void,
): Promise<SeedFigures> {
  const started = Date.now();
  const figures: SeedFigures = { stepsMs: {}, totalMs: 0 };
  const text = corpus();
  const sizes = sourceSizes(spec);
  if (catalog.channelIds.length < spec.sources)
    throw new Error(`the catalog has ${catalog.channelIds.length} channels, ${spec.sources} needed`);
  const ids = sizes.map((_, i) => i + 1);
  const firstN: number[] = [];
  let next = 1;
  for (const n of sizes) {
    firstN.push(next);
    next += n;
  }
  const cat = { source: [] as number[], pos: [] as number[], video: [] as string[] };
  for (let i = 0; i < spec.sources; i++) {
    (catalog.videoIds[i] ?? []).slice(0, sizes[i]).forEach((v, p) => {
      cat.source.push(i + 1);
      cat.pos.push(p);
      cat.video.push(v);
    });
  }
  // what the history spent: 1 + 1 per video per batch, one listing per sync run
  const credits = spec.videos * 2 + spec.sources * spec.historyDays * 24;

  await sql.unsafe(`drop schema if exists ${STAGE} cascade; create schema ${STAGE}`);
  await sql.unsafe(
    `create unlogged table ${STAGE}.params as
       select now() as as_of, now() - make_interval(days => $1::int) as t0, $2::int as sources, $3::int as batches, $4::bigint as credits_spent`,
    [spec.historyDays, spec.sources, spec.incrementalBatches, credits],
  );
  await sql.unsafe(
    `create unlogged table ${STAGE}.src as
       select u.id, u.n_videos, u.first_n, u.channel_id,
         p.t0 + (u.id - 1) * (interval '12 hours' / p.sources) as created_at,
         make_interval(secs => (u.id * 1.7) % 3600) as stagger,
         case when u.id = 1 then u.n_videos else ${SOURCE_LIST_LIMIT} end as list_limit
       from unnest($1::int[], $2::int[], $3::int[], $4::text[]) as u(id, n_videos, first_n, channel_id)
       cross join ${STAGE}.params p`,
    [ids, sizes, firstN, catalog.channelIds.slice(0, spec.sources)],
  );
  await sql.unsafe(
    `create unlogged table ${STAGE}.cat as select * from unnest($1::int[], $2::int[], $3::text[]) as u(source_id, pos, video_id)`,
    [cat.source, cat.pos, cat.video],
  );
  await sql.unsafe(
    `alter table ${STAGE}.src add primary key (id); alter table ${STAGE}.cat add primary key (source_id, pos)`,
  );
  const skipKeyChecks = await triggerFreeTables(sql);
  for (const step of [...stagingSteps(), ...headSteps()]) await runStep(sql, step, text, skipKeyChecks, figures, say);

  // two lanes side by side, about equally long; videos, transcripts and source_videos in one
  // lane, one after the other (source_stats' triggers count a source's videos when the second of
  // a video's rows arrives: concurrent transactions would not see each other's)
  const steps = new Map([...itemSteps(), ...otherSteps()].map((s) => [s.name, s]));
  const lane = (names: string[]) => names.map((n) => steps.get(n)!);
  const laneA = lane([
    'batch_items (first backfills, transcript)',
    'batch_items (incremental)',
    'sync_runs (older half)',
    'video_sync',
  ]);
  const laneB = lane([
    'videos',
    'transcripts',
    'source_videos',
    'batch_items (first backfills, video)',
    'sync_runs (newer half)',
    'credit_snapshots',
  ]);
  if (laneA.length + laneB.length !== steps.size || [...laneA, ...laneB].some((s) => s === undefined)) {
    throw new Error('seed: every step must be in exactly one lane');
  }
  // The history triggers of migrations/0010 would copy every seeded transcript into
  // transcript_versions and write an event per row: a year of events is mostly pruned
  // (EVENTS_RETENTION_DAYS) and no operation measured here reads the history, so the seed leaves
  // them out (doubling the 10x database and its seeding time for nothing measured).
  await setHistoryTriggers(sql, false);
  await Promise.all(
    [laneA, laneB].map(async (lane) => {
      for (const step of lane) await runStep(sql, step, text, skipKeyChecks, figures, say);
    }),
  );
  await setHistoryTriggers(sql, true);
  // Since migrations/0015 storing a transcript only queues it for the search indexer: a year
  // of history has long been indexed, so the seed builds every queued transcript's search index
  // in one statement and empties the queue: its passages where the tree searches them
  // (migrations/0025), its windows before.
  const [queue] = await sql<{ exists: boolean }[]>`select to_regclass('search_index_queue') is not null as exists`;
  if (queue!.exists) {
    const [searched] = await sql<{ passages: boolean }[]>`
      select exists (select 1 from information_schema.columns where table_name = 'passages' and column_name = 'tsv') as passages`;
    await runStep(sql, searched!.passages ? passagesStep() : windowsStep(), text, skipKeyChecks, figures, say);
    await sql`truncate search_index_queue`;
  }
  const [web] = await sql<{ exists: boolean }[]>`select to_regclass('pages') is not null as exists`;
  if (web!.exists) {
    // since migrations/0032 a page's passages are its search index, and page_sections keeps no row
    const [sections] = await sql<{ kept: boolean }[]>`
      select not exists (select 1 from pg_trigger where tgname = 'page_sections_not_kept') as kept`;
    for (const step of pageSteps(spec, sections!.kept)) await runStep(sql, step, text, skipKeyChecks, figures, say);
  }
  // Since migrations/0027 passages have vectors where pgvector is: a year's corpus has long been
  // embedded, so the seed stores a vector for every passage text of the model searched, then
  // builds its HNSW index (as the embedder does once the first vectors are stored).
  const [vectors] = await sql<{ type: string | null }[]>`
    select (select format_type(a.atttypid, a.atttypmod) from pg_attribute a
      where a.attrelid = to_regclass('embeddings') and a.attname = 'embedding') as type`;
  if (vectors!.type !== null) {
    for (const step of embeddingSteps(vectors!.type)) await runStep(sql, step, text, skipKeyChecks, figures, say);
  }
  await sql.unsafe(`drop schema ${STAGE} cascade`);
  figures.totalMs = Date.now() - started;
  return figures;
}

/**
 * A vector of EMBEDDING_DIMENSIONS for each passage text (EMBEDDED_PER_MILLE of them), in SQL:
 * a pool of EMBEDDING_POOL pseudo-random vectors (fixed seed), each text's vector the normalised
 * sum of the two its hash picks (16 million distinct ones, clustered around the pool's, as real
 * embeddings cluster by topic); then the model's partial HNSW index as src/db/embeddings.ts
 * builds it, on the column's type (`halfvec` since migrations/0028, `vector` before); with every
 * text embedded, the coverage an idle embedder records (migrations/0030).
 */
export function embeddingSteps(columnType: string): Step[] {
  const type = columnType === 'vector' ? 'vector' : 'halfvec';
  const d = EMBEDDING_DIMENSIONS;
  const model = EMBEDDING_MODEL.replaceAll("'", "''");
  const pick = (from: number) => `('x' || substr(t.sha256, ${from}, 3))::bit(12)::int % ${EMBEDDING_POOL}`;
  return [
    {
      name: `embeddings (${d} dimensions, ${type})`,
      table: 'embeddings',
      sql: `select setseed(0.42);
        create unlogged table ${STAGE}.vec_pool as
          select i, (select array_agg(random()::real - 0.5) from generate_series(1, ${d}) where i >= 0)::vector(${d}) as v
          from generate_series(0, ${EMBEDDING_POOL - 1}) i;
        alter table ${STAGE}.vec_pool add primary key (i);
        insert into embeddings (model, sha256, dimensions, embedding, tokens)
        select '${model}', t.sha256, ${d}, l2_normalize(a.v + b.v)::${type}, t.tokens
        from (select sha256, min(tokens) as tokens from passages group by sha256) t
          join ${STAGE}.vec_pool a on a.i = ${pick(1)}
          join ${STAGE}.vec_pool b on b.i = ${pick(4)}
        where ('x' || substr(t.sha256, 7, 3))::bit(12)::int < ${EMBEDDED_PER_MILLE} * 4096 / 1000`,
    },
    {
      name: `embeddings HNSW index (${d} dimensions, ${type})`,
      sql: `set local maintenance_work_mem = '${HNSW_BUILD_MEMORY}';
        create index "embeddings_hnsw_${createHash('sha256').update(EMBEDDING_MODEL, 'utf8').digest('hex').slice(0, 16)}_${d}" on embeddings
          using hnsw ((embedding::${type}(${d})) ${type}_cosine_ops)
          where model = '${model}' and dimensions = ${d}`,
    },
    {
      // what an idle embedder records once every passage has a vector (an older tree lacks the table)
      name: 'embedding_coverage (the model covers the corpus)',
      sql: `do $$ begin
          if to_regclass('embedding_coverage') is not null and ${EMBEDDED_PER_MILLE} >= 1000 then
            insert into embedding_coverage (model, dimensions, through_passage_id)
            select '${model}', ${d}, coalesce(max(id), 0) from passages on conflict do nothing;
          end if;
        end $$`,
    },
  ];
}

/** The search windows of every queued transcript, as search_index_pending() of migrations/0015 builds them. */
function windowsStep(): Step {
  return {
    name: 'transcript_windows (the search index)',
    sql: `insert into transcript_windows (video_id, lang, n, start_s, end_s, text, config, tsv)
      select r.video_id, r.lang, r.n, r.start_s, r.end_s, r.text, r.config, r.tsv
      from transcript_window_rows r join search_index_queue q on q.video_id = r.video_id and q.lang = r.lang`,
  };
}

/**
 * The passages of every queued transcript, in SQL (the cutter in Node takes ~0.5 ms a transcript:
 * 10x would seed for minutes more), shaped as the cutter cuts the seed's text at 256/32 tokens:
 * measured with cutPassages on 2 000 of these 5-chunk transcripts, 3.3 passages of ~410
 * characters each, each after the first starting with the last words of the chunk before. Here:
 * chunks 0-1; the end of chunk 1, then 2-3; the end of chunk 3, then 4. The configuration and
 * tsvector come from the passages' trigger (migrations/0025), as the indexer's writes.
 */
export function passagesStep(): Step {
  if (ROW_CHUNKS !== 5) throw new Error('passagesStep cuts 5-chunk transcripts');
  const chunk = (i: string) => `(t.chunks -> ${i} ->> 'text')`;
  return {
    name: 'passages (the search index)',
    sql: `insert into passages (kind, doc, lang, n, text, tokens, sha256, start_s, end_s, first_chunk, last_chunk)
      select 'transcript', t.video_id, t.lang, g.n, x.text, length(x.text) * 10 / 16, encode(sha256(convert_to(x.text, 'UTF8')), 'hex'),
        (t.chunks -> g.first_chunk ->> 'offset')::float8 / 1000,
        ((t.chunks -> g.last_chunk ->> 'offset')::float8 + (t.chunks -> g.last_chunk ->> 'duration')::float8) / 1000,
        g.first_chunk, g.last_chunk
      from transcripts t join search_index_queue q on q.video_id = t.video_id and q.lang = t.lang
      cross join (values (0, 0, 1, false), (1, 1, 3, true), (2, 3, 4, true)) as g(n, first_chunk, last_chunk, tail)
      cross join lateral (
        select concat_ws(' ',
          case when g.tail then regexp_replace(right(${chunk('g.first_chunk')}, 50), '^\\S*\\s+', '') end,
          (select string_agg(${chunk('i')}, ' ' order by i)
            from generate_series(g.first_chunk + g.tail::int, g.last_chunk) as i)) as text
      ) x`,
  };
}
