-- vsi: backward-compatible
-- The current version of a transcript stored once (issue #34): its history row held a second copy
-- of the text and chunks `transcripts` holds. The history table becomes `transcript_version_rows`,
-- where the current version's text and chunks are null; the triggers fill them from the row that
-- a change, a delete or a truncate replaces, in the same statement. `transcript_versions` becomes
-- a view with the same columns in the same order, the current text and chunks read from
-- `transcripts`: what people and older builds read from it reads the same. It is automatically
-- updatable for every column but text and chunks (an older build moves `last_seen_at` through
-- it, src/db/transcripts.ts `touchVersions`); an older build writes no version itself (the
-- triggers do, with these functions), so it keeps working on this schema.
ALTER TABLE "transcript_versions" RENAME TO "transcript_version_rows";--> statement-breakpoint
ALTER TABLE "transcript_version_rows" ALTER COLUMN "text" DROP NOT NULL;--> statement-breakpoint
-- What it stores now is past versions only, written once when replaced and seldom read: pglz
-- (smaller than lz4, slower to write) pays there; `transcripts` and the raw items, written on
-- every landing, keep lz4 (migrations/0001). A value copied as it is keeps the compression it
-- has, so the triggers copy a new one (`|| ''`, `::text::jsonb`), which this column's method compresses.
ALTER TABLE "transcript_version_rows" ALTER COLUMN "text" SET COMPRESSION pglz;--> statement-breakpoint
ALTER TABLE "transcript_version_rows" ALTER COLUMN "chunks" SET COMPRESSION pglz;--> statement-breakpoint
CREATE VIEW "transcript_versions" AS
  SELECT v.id, v.video_id, v.lang, v.content_sha256,
    coalesce(v.text, (SELECT t.text FROM transcripts t WHERE t.video_id = v.video_id AND t.lang = v.lang)) AS text,
    CASE WHEN v.text IS NULL
      THEN (SELECT t.chunks FROM transcripts t WHERE t.video_id = v.video_id AND t.lang = v.lang)
      ELSE v.chunks END AS chunks,
    v.available_langs, v.job_id, v.first_seen_at, v.last_seen_at, v.last_job_id
  FROM transcript_version_rows v;
--> statement-breakpoint
-- Same functions as migrations/0020, but for the text and chunks: a new current version is
-- stored without them (and a return to an earlier version clears its copy), the version a change
-- replaces gets them back from the old row.
CREATE OR REPLACE FUNCTION "transcripts_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH versions AS (
    INSERT INTO transcript_version_rows (video_id, lang, content_sha256, available_langs, job_id, last_job_id)
    SELECT video_id, lang, content_sha256, available_langs, last_job_id, last_job_id FROM new_rows
    ON CONFLICT (video_id, lang, content_sha256) DO UPDATE
      SET last_seen_at = now(), last_job_id = excluded.last_job_id, text = NULL, chunks = NULL
  )
  INSERT INTO event_queue (type, data, source_id, video_id)
  SELECT 'transcript.added',
    jsonb_build_object('videoId', n.video_id, 'sourceId', coalesce(b.source_id, tr.source_id), 'lang', n.lang,
      'sha256', n.content_sha256, 'jobId', n.last_job_id, 'origin', n.origin)
      || CASE WHEN n.translated_from IS NOT NULL THEN jsonb_build_object('translatedFrom', n.translated_from) ELSE '{}'::jsonb END,
    coalesce(b.source_id, tr.source_id), n.video_id
  FROM new_rows n
    LEFT JOIN batches b ON b.job_id = n.last_job_id
    LEFT JOIN translations tr ON n.last_job_id LIKE 'translation:%' AND tr.id::text = substr(n.last_job_id, 13)
  ORDER BY n.video_id, n.lang;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "transcripts_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH d AS (
    SELECT n.video_id, n.lang, n.content_sha256, n.text, n.chunks, n.available_langs, n.last_job_id, n.origin,
      n.translated_from,
      o.content_sha256 AS old_sha, o.text AS old_text, o.chunks AS old_chunks, o.available_langs AS old_langs,
      o.last_job_id AS old_job_id, o.origin AS old_origin, o.updated_at AS old_updated_at
    FROM new_rows n JOIN old_rows o USING (video_id, lang)
    WHERE n.content_sha256 IS DISTINCT FROM o.content_sha256
  ), replaced AS (
    INSERT INTO transcript_version_rows AS v (video_id, lang, content_sha256, text, chunks, available_langs, job_id, first_seen_at, last_seen_at, last_job_id)
    SELECT video_id, lang, old_sha, old_text || '', old_chunks::text::jsonb, old_langs, old_job_id, old_updated_at, now(), old_job_id FROM d
    ON CONFLICT (video_id, lang, content_sha256) DO UPDATE SET text = excluded.text, chunks = excluded.chunks
      WHERE v.text IS NULL
  ), latest AS (
    INSERT INTO transcript_version_rows (video_id, lang, content_sha256, available_langs, job_id, last_job_id)
    SELECT video_id, lang, content_sha256, available_langs, last_job_id, last_job_id FROM d
    ON CONFLICT (video_id, lang, content_sha256) DO UPDATE
      SET last_seen_at = now(), last_job_id = excluded.last_job_id, text = NULL, chunks = NULL
  )
  INSERT INTO event_queue (type, data, source_id, video_id)
  SELECT 'transcript.changed',
    jsonb_build_object('videoId', d.video_id, 'sourceId', coalesce(b.source_id, tr.source_id), 'lang', d.lang,
      'sha256', d.content_sha256, 'previousSha256', d.old_sha, 'jobId', d.last_job_id, 'origin', d.origin,
      -- what differs, for a consumer that wants only new words (`text`) and not, say, a
      -- language added to the video (`availableLangs`)
      'changed', to_jsonb(array_remove(ARRAY[
        CASE WHEN d.text IS DISTINCT FROM d.old_text THEN 'text' END,
        CASE WHEN d.chunks IS DISTINCT FROM d.old_chunks THEN 'chunks' END,
        CASE WHEN d.available_langs IS DISTINCT FROM d.old_langs THEN 'availableLangs' END,
        CASE WHEN d.origin IS DISTINCT FROM d.old_origin THEN 'origin' END], NULL)))
      || CASE WHEN d.translated_from IS NOT NULL THEN jsonb_build_object('translatedFrom', d.translated_from) ELSE '{}'::jsonb END,
    coalesce(b.source_id, tr.source_id), d.video_id
  FROM d
    LEFT JOIN batches b ON b.job_id = d.last_job_id
    LEFT JOIN translations tr ON d.last_job_id LIKE 'translation:%' AND tr.id::text = substr(d.last_job_id, 13)
  ORDER BY d.video_id, d.lang;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- A transcript deleted (a person's SQL, a test) or truncated takes the current text and chunks
-- with it: its current version gets them back first.
CREATE FUNCTION "transcripts_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE transcript_version_rows v SET text = o.text || '', chunks = o.chunks::text::jsonb
  FROM old_rows o
  WHERE v.text IS NULL AND v.video_id = o.video_id AND v.lang = o.lang AND v.content_sha256 = o.content_sha256;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "transcripts_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE transcript_version_rows v SET text = t.text || '', chunks = t.chunks::text::jsonb
  FROM transcripts t
  WHERE v.text IS NULL AND v.video_id = t.video_id AND v.lang = t.lang AND v.content_sha256 = t.content_sha256;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "transcripts_removed" AFTER DELETE ON "transcripts" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transcripts_removed();
--> statement-breakpoint
CREATE TRIGGER "transcripts_truncated" BEFORE TRUNCATE ON "transcripts"
  FOR EACH STATEMENT EXECUTE FUNCTION transcripts_truncated();
--> statement-breakpoint
-- The copies stored so far cleared, a range of ids at a time (a year of history is millions of
-- rows): only where the row equals the current transcript.
DO $$
DECLARE
  lo bigint;
  hi bigint;
  step constant bigint := 10000;
BEGIN
  SELECT min(id), max(id) INTO lo, hi FROM transcript_version_rows;
  WHILE lo <= hi LOOP
    UPDATE transcript_version_rows v SET text = NULL, chunks = NULL
    FROM transcripts t
    WHERE v.id >= lo AND v.id < lo + step AND v.text IS NOT NULL
      AND t.video_id = v.video_id AND t.lang = v.lang AND t.content_sha256 = v.content_sha256
      AND t.text = v.text AND t.chunks IS NOT DISTINCT FROM v.chunks;
    lo := lo + step;
  END LOOP;
END
$$;
