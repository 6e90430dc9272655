-- vsi: backward-compatible
-- Counter shards 16 -> 64 (issue #12, W1). A landing transaction counts its items in item_counts
-- first (the batch_items trigger) and holds that counter row until it commits, after the
-- transcripts of the chunk and their search windows are written (~1 s for 500 transcripts). A
-- second batch landing at the same time in the same shard waits for all of it: sampling
-- pg_stat_activity through a bench W1 found the batch_items insert waiting on `transactionid`
-- in about one active backend sample in seven. With 8 transactions landing side by side, two of
-- them share one of 16 shards 88% of the time, one of 64 shards 37%. Readers sum every shard,
-- so only the spread changes. A daemon of the previous release still counts in shards 0-15:
-- totals stay exact, and the next recount spreads them again.
--
-- SHARE on batch_items first (as 0006 explains: a writer holds batch_items, then wants
-- item_counts), so the recount below counts every item exactly once.
LOCK TABLE "batch_items" IN SHARE MODE;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "batch_item_counts_add"(job_ids text[], states text[], error_codes text[], reason_codes text[], pendings boolean[], ns bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- a batch deleted in this statement's transaction (its counts go with it, by cascade) is skipped:
  -- inserting its rows again would fail the foreign key
  INSERT INTO batch_item_counts AS c (job_id, state, error_code, n)
  SELECT d.job_id, d.state, d.error_code, sum(d.n)
  FROM unnest(job_ids, states, error_codes, ns) AS d(job_id, state, error_code, n)
  WHERE EXISTS (SELECT 1 FROM batches b WHERE b.job_id = d.job_id)
  GROUP BY 1, 2, 3 HAVING sum(d.n) <> 0
  ORDER BY 1, 2, 3
  ON CONFLICT (job_id, state, error_code) DO UPDATE SET n = c.n + excluded.n;
  INSERT INTO item_counts AS c (shard, state, error_code, reason_code, pending, n)
  SELECT abs(hashtext(d.job_id)) % 64, d.state, d.error_code, d.reason_code, d.pending, sum(d.n)
  FROM unnest(job_ids, states, error_codes, reason_codes, pendings, ns) AS d(job_id, state, error_code, reason_code, pending, n)
  GROUP BY 1, 2, 3, 4, 5 HAVING sum(d.n) <> 0
  ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (shard, state, error_code, reason_code, pending) DO UPDATE SET n = c.n + excluded.n;
END
$$;

--> statement-breakpoint
DELETE FROM item_counts;
--> statement-breakpoint
INSERT INTO item_counts (shard, state, error_code, reason_code, pending, n)
SELECT abs(hashtext(job_id)) % 64, state, coalesce(error_code, ''), coalesce(reason_code, ''),
  state = 'retryable' AND resubmitted_in IS NULL, count(*)
FROM batch_items GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
-- video_outcome_counts is sharded by the writing transaction (migrations/0008): rows in any shard
-- are right, nothing to move
CREATE OR REPLACE FUNCTION "video_outcome_counts_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM video_outcome_counts;
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO video_outcome_counts AS c (shard, kind, lang, state, error_code, delivered_lang, n)
    SELECT txid_current() % 64, kind, lang, coalesce(last_state, ''), coalesce(last_error_code, ''), coalesce(delivered_lang, ''), count(*)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (shard, kind, lang, state, error_code, delivered_lang) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO video_outcome_counts AS c (shard, kind, lang, state, error_code, delivered_lang, n)
    SELECT txid_current() % 64, kind, lang, coalesce(last_state, ''), coalesce(last_error_code, ''), coalesce(delivered_lang, ''), -count(*)
    FROM old_rows GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (shard, kind, lang, state, error_code, delivered_lang) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    -- most updates (a claim pointed at its batch, a re-check time) move no video between keys:
    -- their sums are zero and they write nothing
    INSERT INTO video_outcome_counts AS c (shard, kind, lang, state, error_code, delivered_lang, n)
    SELECT txid_current() % 64, kind, lang, state, error_code, delivered_lang, sum(x.n)
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
