CREATE TABLE "video_outcome_counts" (
	"shard" smallint NOT NULL,
	"kind" text NOT NULL,
	"lang" text NOT NULL,
	"state" text NOT NULL,
	"error_code" text NOT NULL,
	"delivered_lang" text NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "video_outcome_counts_shard_kind_lang_state_error_code_delivered_lang_pk" PRIMARY KEY("shard","kind","lang","state","error_code","delivered_lang")
);
--> statement-breakpoint
ALTER TABLE "video_sync" ADD COLUMN "delivered_lang" text;--> statement-breakpoint
-- Custom SQL (drizzle-kit cannot express triggers). `status`, `/metrics` and the overview counted
-- every item ever received (item_counts): "10 retryable" stayed after those videos were
-- re-submitted and stored. They now count each video's latest outcome per kind and language,
-- from counters over video_sync kept as item_counts is (migrations/0005): statement-level
-- triggers, one aggregate per statement, upserts in key order. The shard is the writing
-- transaction's (txid % 16), not the row's: a claim or an outcome moves a video from one key to
-- another, and both halves of the move land in the same shard, so one transaction never takes
-- counter rows in two shards, and two transactions share rows only when their txids collide.
CREATE FUNCTION "video_outcome_counts_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM video_outcome_counts;
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO video_outcome_counts AS c (shard, kind, lang, state, error_code, delivered_lang, n)
    SELECT txid_current() % 16, kind, lang, coalesce(last_state, ''), coalesce(last_error_code, ''), coalesce(delivered_lang, ''), count(*)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (shard, kind, lang, state, error_code, delivered_lang) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO video_outcome_counts AS c (shard, kind, lang, state, error_code, delivered_lang, n)
    SELECT txid_current() % 16, kind, lang, coalesce(last_state, ''), coalesce(last_error_code, ''), coalesce(delivered_lang, ''), -count(*)
    FROM old_rows GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (shard, kind, lang, state, error_code, delivered_lang) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    -- most updates (a claim pointed at its batch, a re-check time) move no video between keys:
    -- their sums are zero and they write nothing
    INSERT INTO video_outcome_counts AS c (shard, kind, lang, state, error_code, delivered_lang, n)
    SELECT txid_current() % 16, kind, lang, state, error_code, delivered_lang, sum(x.n)
    FROM (SELECT kind, lang, coalesce(last_state, '') AS state, coalesce(last_error_code, '') AS error_code,
            coalesce(delivered_lang, '') AS delivered_lang, -1 AS n FROM old_rows
          UNION ALL
          SELECT kind, lang, coalesce(last_state, ''), coalesce(last_error_code, ''), coalesce(delivered_lang, ''), 1 FROM new_rows) x
    GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(x.n) <> 0 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (shard, kind, lang, state, error_code, delivered_lang) DO UPDATE SET n = c.n + excluded.n;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- What the transcripts stored say the latest delivery of each transcript came in: the language
-- asked for when a transcript in it is stored, else the one its batch wrote, else any. (Rows
-- still `landed` get theirs from the sink.)
UPDATE "video_sync" s SET "delivered_lang" = coalesce(
  (SELECT t.lang FROM transcripts t WHERE t.video_id = s.video_id AND t.lang = s.lang),
  (SELECT t.lang FROM transcripts t WHERE t.video_id = s.video_id
   ORDER BY t.last_job_id IS NOT DISTINCT FROM s.last_job_id DESC, t.first_seen_at, t.lang LIMIT 1))
WHERE s.kind = 'transcript' AND s.last_state = 'sunk';
--> statement-breakpoint
-- ALTER TABLE above holds video_sync against every writer until this migration commits, so this
-- count and the triggers' first deltas never overlap
INSERT INTO video_outcome_counts (shard, kind, lang, state, error_code, delivered_lang, n)
SELECT 0, kind, lang, coalesce(last_state, ''), coalesce(last_error_code, ''), coalesce(delivered_lang, ''), count(*)
FROM video_sync GROUP BY 2, 3, 4, 5, 6;
--> statement-breakpoint
CREATE TRIGGER "video_sync_outcome_counts_insert" AFTER INSERT ON "video_sync"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION video_outcome_counts_changes();
--> statement-breakpoint
CREATE TRIGGER "video_sync_outcome_counts_update" AFTER UPDATE ON "video_sync"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION video_outcome_counts_changes();
--> statement-breakpoint
CREATE TRIGGER "video_sync_outcome_counts_delete" AFTER DELETE ON "video_sync"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION video_outcome_counts_changes();
--> statement-breakpoint
CREATE TRIGGER "video_sync_outcome_counts_truncate" AFTER TRUNCATE ON "video_sync"
  FOR EACH STATEMENT EXECUTE FUNCTION video_outcome_counts_changes();
