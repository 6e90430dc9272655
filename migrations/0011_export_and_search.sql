CREATE TABLE "export_cursors" (
	"name" text PRIMARY KEY NOT NULL,
	"last_event_id" bigint DEFAULT 0 NOT NULL,
	"records" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "transcript_windows" (
	"video_id" text NOT NULL,
	"lang" text NOT NULL,
	"n" integer NOT NULL,
	"start_s" double precision,
	"end_s" double precision,
	"text" text NOT NULL,
	"config" "regconfig" NOT NULL,
	"tsv" "tsvector" NOT NULL,
	CONSTRAINT "transcript_windows_video_id_lang_n_pk" PRIMARY KEY("video_id","lang","n")
);
--> statement-breakpoint
CREATE INDEX "transcript_windows_tsv_idx" ON "transcript_windows" USING gin ("tsv");--> statement-breakpoint
-- Custom SQL: the search index's trigger (issue #15)
-- Each transcript is cut into windows of 5 consecutive chunks (SEARCH_WINDOW_CHUNKS), each window
-- starting at the last chunk of the one before: a phrase across two chunks is whole in one
-- window, and a hit names a moment within ~4 chunks (10-20 s of speech) before the query narrows
-- it to the chunk. Five chunks of the simulator's captions are ~300-400 characters: a snippet's
-- worth, so ts_headline and ts_rank_cd work on short documents, and the overlap indexes 1.25x
-- the text. A plain-text transcript (no chunks) is cut the same way into pieces of 12 words
-- (a word longer than 40 characters, e.g. unspaced CJK, is cut into 40-character parts), with
-- no moment (start_s null).
--
-- The language's text search configuration, one place: `search_config_map` (ISO 639-1 code ->
-- a configuration this server has; `simple` for any other language). src/db/search.ts reads it.
CREATE FUNCTION "search_config_map"() RETURNS TABLE(lang text, config regconfig) LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT m.lang, c.oid::regconfig FROM (VALUES
    ('ar', 'arabic'), ('hy', 'armenian'), ('eu', 'basque'), ('ca', 'catalan'), ('da', 'danish'),
    ('nl', 'dutch'), ('en', 'english'), ('fi', 'finnish'), ('fr', 'french'), ('de', 'german'),
    ('el', 'greek'), ('hi', 'hindi'), ('hu', 'hungarian'), ('id', 'indonesian'), ('ga', 'irish'),
    ('it', 'italian'), ('lt', 'lithuanian'), ('ne', 'nepali'), ('no', 'norwegian'), ('nb', 'norwegian'),
    ('nn', 'norwegian'), ('pt', 'portuguese'), ('ro', 'romanian'), ('ru', 'russian'), ('sr', 'serbian'),
    ('es', 'spanish'), ('sv', 'swedish'), ('ta', 'tamil'), ('tr', 'turkish'), ('yi', 'yiddish')
  ) AS m(lang, cfg)
  JOIN pg_ts_config c ON c.cfgname = m.cfg AND c.cfgnamespace = 'pg_catalog'::regnamespace
$$;
--> statement-breakpoint
-- `en`, `en-US`, `pt_BR` -> the configuration of the primary subtag
CREATE FUNCTION "search_config"(lang text) RETURNS regconfig LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(
    (SELECT m.config FROM search_config_map() m WHERE m.lang = lower(split_part(replace($1, '_', '-'), '-', 1))),
    'simple'::regconfig)
$$;
--> statement-breakpoint
-- What the parser reads. It takes a run of Han, Hiragana or Katakana characters (no spaces in
-- Chinese or Japanese) as one word, so no part of a sentence could be found: each such character
-- becomes a word of its own between zero-width spaces (U+200B, not a word character), and a
-- query's CJK run becomes a phrase of single characters (src/domain/search.ts). The window's
-- `text` stays as delivered; snippets drop the U+200B again.
CREATE FUNCTION "search_document"(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN t ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]'
    THEN regexp_replace(t, '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])', chr(8203) || '\1' || chr(8203), 'g')
    ELSE t END
$$;
--> statement-breakpoint
-- Every transcript's windows, computed from `transcripts` (the trigger reads the keys a statement
-- wrote; the upgrade below reads all). Chunks without numeric offsets (a person's SQL) still
-- index their text, without a moment, rather than fail the write.
CREATE VIEW "transcript_window_rows" AS
SELECT t.video_id, t.lang, g.n, p.starts[g.n * 4 + 1] AS start_s,
  p.ends[least(g.n * 4 + 5, cardinality(p.texts))] AS end_s,
  w.text, cfg.config, to_tsvector(cfg.config, search_document(w.text)) AS tsv
FROM transcripts t
-- once per transcript, not per window (OFFSET 0 keeps the planner from inlining it into each)
CROSS JOIN LATERAL (SELECT search_config(t.lang) AS config OFFSET 0) cfg
CROSS JOIN LATERAL (
  -- the chunks: texts, start and end in seconds (the API's offset and duration are milliseconds)
  SELECT array_agg(coalesce(c.v->>'text', '') ORDER BY c.i) AS texts,
    array_agg(CASE WHEN jsonb_typeof(c.v->'offset') = 'number' THEN (c.v->>'offset')::float8 / 1000 END ORDER BY c.i) AS starts,
    array_agg(CASE WHEN jsonb_typeof(c.v->'offset') = 'number' AND jsonb_typeof(c.v->'duration') = 'number'
      THEN ((c.v->>'offset')::float8 + (c.v->>'duration')::float8) / 1000 END ORDER BY c.i) AS ends,
    ' ' AS sep
  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(t.chunks) = 'array' THEN t.chunks ELSE '[]'::jsonb END) WITH ORDINALITY AS c(v, i)
  WHERE jsonb_typeof(c.v) = 'object'
  HAVING count(*) > 0
  UNION ALL
  -- plain text: pieces of 12 tokens, a token a word and its following blanks (a longer word is
  -- cut every 40 characters), so the pieces put back together are the text as delivered
  SELECT array(SELECT array_to_string(tok.a[k * 12 + 1 : k * 12 + 12], '')
      FROM generate_series(0, (cardinality(tok.a) - 1) / 12) AS k ORDER BY k),
    NULL, NULL, ''
  FROM (SELECT array(SELECT m[1] FROM regexp_matches(t.text, '\S{1,40}\s*', 'g') AS m) AS a) tok
  WHERE t.chunks IS NULL AND cardinality(tok.a) > 0
) p
-- window n: chunks 4n .. 4n+4 (1-based 4n+1 .. 4n+5); the last one may be shorter, and none
-- holds only the chunk that ends the one before
CROSS JOIN LATERAL generate_series(0, (cardinality(p.texts) - 2) / 4) AS g(n)
CROSS JOIN LATERAL (SELECT rtrim(array_to_string(p.texts[g.n * 4 + 1 : g.n * 4 + 5], p.sep)) AS text) w;
--> statement-breakpoint
-- Statement-level triggers with transition tables: one INSERT ... SELECT per statement (the
-- poller writes up to LAND_CHUNK_ITEMS transcripts in one), in the writing transaction, so a
-- transcript is never stored without its windows. Postgres allows transition tables on
-- single-event triggers only, hence three triggers on one function. An update rebuilds a
-- transcript's windows only when its content (content_sha256) changed.
-- jit off: the planner's row guesses for the set-returning functions put the insert far above
-- jit_above_cost, and compiling it took ~0.5 s per statement, more than the work itself.
CREATE FUNCTION "transcript_windows_sync"() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $$
DECLARE
  video_ids text[];
  langs text[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    -- windows left by rows a TRUNCATE removed before the trigger below existed, or by a
    -- person's SQL with triggers off: replaced, never a duplicate key failing the write
    DELETE FROM transcript_windows w USING new_rows k WHERE w.video_id = k.video_id AND w.lang = k.lang;
    INSERT INTO transcript_windows (video_id, lang, n, start_s, end_s, text, config, tsv)
    SELECT r.video_id, r.lang, r.n, r.start_s, r.end_s, r.text, r.config, r.tsv
    FROM transcript_window_rows r JOIN new_rows k ON k.video_id = r.video_id AND k.lang = r.lang;
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    SELECT array_agg(n.video_id), array_agg(n.lang) INTO video_ids, langs
    FROM new_rows n LEFT JOIN old_rows o ON o.video_id = n.video_id AND o.lang = n.lang
    WHERE o.content_sha256 IS DISTINCT FROM n.content_sha256;
  ELSE
    SELECT array_agg(o.video_id), array_agg(o.lang) INTO video_ids, langs FROM old_rows o;
  END IF;
  IF video_ids IS NULL THEN
    RETURN NULL;
  END IF;
  DELETE FROM transcript_windows w USING unnest(video_ids, langs) AS k(video_id, lang)
  WHERE w.video_id = k.video_id AND w.lang = k.lang;
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO transcript_windows (video_id, lang, n, start_s, end_s, text, config, tsv)
    SELECT r.video_id, r.lang, r.n, r.start_s, r.end_s, r.text, r.config, r.tsv
    FROM transcript_window_rows r JOIN unnest(video_ids, langs) AS k(video_id, lang) ON k.video_id = r.video_id AND k.lang = r.lang;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "transcript_windows_inserted" AFTER INSERT ON "transcripts"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION transcript_windows_sync();
--> statement-breakpoint
CREATE TRIGGER "transcript_windows_updated" AFTER UPDATE ON "transcripts"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION transcript_windows_sync();
--> statement-breakpoint
CREATE TRIGGER "transcript_windows_deleted" AFTER DELETE ON "transcripts"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION transcript_windows_sync();
--> statement-breakpoint
-- TRUNCATE fires no DELETE trigger: the index goes with the table (DELETE, not TRUNCATE: a
-- `TRUNCATE ... CASCADE` has the tables open already)
CREATE FUNCTION "transcript_windows_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM transcript_windows;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "transcript_windows_truncated" AFTER TRUNCATE ON "transcripts"
  FOR EACH STATEMENT EXECUTE FUNCTION transcript_windows_truncate();
--> statement-breakpoint
-- an installation upgraded with transcripts already stored: their windows, once
SET LOCAL jit = off;
--> statement-breakpoint
INSERT INTO transcript_windows (video_id, lang, n, start_s, end_s, text, config, tsv)
SELECT video_id, lang, n, start_s, end_s, text, config, tsv FROM transcript_window_rows;
