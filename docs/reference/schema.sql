-- The schema as it is after every migration, from `npm run docs` (pg_dump of a fresh migrate).
-- Generated: do not edit; test/integration/schema-file.test.ts fails when it is stale.

-- Name: drizzle; Type: SCHEMA; Schema: -; Owner: -

CREATE SCHEMA drizzle;

-- Name: vector; Type: EXTENSION; Schema: -; Owner: -

CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

-- Name: batch_counts_add(text[], text[], bigint[], bigint[]); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.batch_counts_add(job_ids text[], statuses text[], ns bigint[], credits bigint[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO batch_counts AS c (shard, status, batches, credits_estimated)
  SELECT abs(hashtext(d.job_id)) % 16, d.status, sum(d.n), sum(d.credits)
  FROM unnest(job_ids, statuses, ns, credits) AS d(job_id, status, n, credits)
  GROUP BY 1, 2 HAVING sum(d.n) <> 0 OR sum(d.credits) <> 0
  ORDER BY 1, 2
  ON CONFLICT (shard, status) DO UPDATE SET batches = c.batches + excluded.batches, credits_estimated = c.credits_estimated + excluded.credits_estimated;
END
$$;

-- Name: batch_item_counts_add(text[], text[], text[], text[], boolean[], bigint[]); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.batch_item_counts_add(job_ids text[], states text[], error_codes text[], reason_codes text[], pendings boolean[], ns bigint[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
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

-- Name: batch_items_count_changes(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.batch_items_count_changes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  j text[]; s text[]; e text[]; r text[]; p boolean[]; n bigint[];
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    -- DELETE, not TRUNCATE: a `TRUNCATE batches CASCADE` has batch_item_counts open already
    DELETE FROM batch_item_counts;
    DELETE FROM item_counts;
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(d.job_id), array_agg(d.state), array_agg(d.error_code), array_agg(d.reason_code), array_agg(d.pending), array_agg(d.n)
    INTO j, s, e, r, p, n
    FROM (SELECT job_id, state, coalesce(error_code, '') AS error_code, coalesce(reason_code, '') AS reason_code,
            state = 'retryable' AND resubmitted_in IS NULL AS pending, count(*) AS n
          FROM new_rows GROUP BY 1, 2, 3, 4, 5) d;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(d.job_id), array_agg(d.state), array_agg(d.error_code), array_agg(d.reason_code), array_agg(d.pending), array_agg(d.n)
    INTO j, s, e, r, p, n
    FROM (SELECT job_id, state, coalesce(error_code, '') AS error_code, coalesce(reason_code, '') AS reason_code,
            state = 'retryable' AND resubmitted_in IS NULL AS pending, -count(*) AS n
          FROM old_rows GROUP BY 1, 2, 3, 4, 5) d;
  ELSE
    SELECT array_agg(d.job_id), array_agg(d.state), array_agg(d.error_code), array_agg(d.reason_code), array_agg(d.pending), array_agg(d.n)
    INTO j, s, e, r, p, n
    FROM (SELECT job_id, state, error_code, reason_code, pending, sum(x.n) AS n
          FROM (SELECT job_id, state, coalesce(error_code, '') AS error_code, coalesce(reason_code, '') AS reason_code,
                  state = 'retryable' AND resubmitted_in IS NULL AS pending, -1 AS n FROM old_rows
                UNION ALL
                SELECT job_id, state, coalesce(error_code, ''), coalesce(reason_code, ''),
                  state = 'retryable' AND resubmitted_in IS NULL, 1 FROM new_rows) x
          GROUP BY 1, 2, 3, 4, 5 HAVING sum(x.n) <> 0) d;
  END IF;
  IF j IS NOT NULL THEN
    PERFORM batch_item_counts_add(j, s, e, r, p, n);
  END IF;
  RETURN NULL;
END
$$;

-- Name: batches_count_changes(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.batches_count_changes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE j text[]; s text[]; n bigint[]; c bigint[];
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM batch_counts;
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT array_agg(job_id), array_agg(status), array_agg(1::bigint), array_agg(credits_estimated::bigint) INTO j, s, n, c FROM new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(job_id), array_agg(status), array_agg(-1::bigint), array_agg(-credits_estimated::bigint) INTO j, s, n, c FROM old_rows;
  ELSE
    -- only the rows whose status or estimate changed (a poll mostly changes neither)
    SELECT array_agg(x.job_id), array_agg(x.status), array_agg(x.n), array_agg(x.c) INTO j, s, n, c FROM (
      SELECT o.job_id, o.status, -1::bigint AS n, -o.credits_estimated::bigint AS c
      FROM old_rows o JOIN new_rows w USING (job_id) WHERE (o.status, o.credits_estimated) IS DISTINCT FROM (w.status, w.credits_estimated)
      UNION ALL
      SELECT w.job_id, w.status, 1, w.credits_estimated
      FROM old_rows o JOIN new_rows w USING (job_id) WHERE (o.status, o.credits_estimated) IS DISTINCT FROM (w.status, w.credits_estimated)) x;
  END IF;
  IF j IS NOT NULL THEN
    PERFORM batch_counts_add(j, s, n, c);
  END IF;
  RETURN NULL;
END
$$;

-- Name: embedding_counts_attach(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.embedding_counts_attach() RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF to_regclass('embeddings') IS NULL OR EXISTS (
    SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('embeddings') AND tgname = 'embeddings_count_insert'
  ) THEN
    RETURN;
  END IF;
  LOCK TABLE embeddings IN SHARE ROW EXCLUSIVE MODE;
  -- another process attached them while this one waited for the lock
  IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'embeddings'::regclass AND tgname = 'embeddings_count_insert') THEN
    RETURN;
  END IF;
  CREATE TRIGGER "embeddings_count_insert" AFTER INSERT ON "embeddings"
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION embeddings_count_changes();
  CREATE TRIGGER "embeddings_count_update" AFTER UPDATE ON "embeddings"
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION embeddings_count_changes();
  CREATE TRIGGER "embeddings_count_delete" AFTER DELETE ON "embeddings"
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION embeddings_count_changes();
  CREATE TRIGGER "embeddings_count_truncate" AFTER TRUNCATE ON "embeddings"
    FOR EACH STATEMENT EXECUTE FUNCTION embeddings_count_changes();
  DELETE FROM embedding_counts;
  -- a table created again (its vectors gone with the one dropped) covers nothing yet
  DELETE FROM embedding_coverage c WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = c.model);
  INSERT INTO embedding_counts (model, dimensions, shard, texts, last_embedded_at)
  SELECT model, dimensions, 0, count(*), max(embedded_at) FROM embeddings GROUP BY model, dimensions;
END
$$;

-- Name: embeddings_count_changes(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.embeddings_count_changes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE embedding_counts SET texts = 0 WHERE texts <> 0;
    DELETE FROM embedding_coverage;
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    INSERT INTO embedding_counts AS c (model, dimensions, shard, texts, last_embedded_at)
    SELECT model, dimensions, pg_backend_pid() % 16, count(*), max(embedded_at) FROM new_rows GROUP BY model, dimensions
    ON CONFLICT (model, dimensions, shard) DO UPDATE
      SET texts = c.texts + excluded.texts, last_embedded_at = greatest(c.last_embedded_at, excluded.last_embedded_at);
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO embedding_counts AS c (model, dimensions, shard, texts, last_embedded_at)
    SELECT model, dimensions, pg_backend_pid() % 16, sum(d), max(at) FROM (
      SELECT model, dimensions, 1 AS d, embedded_at AS at FROM new_rows
      UNION ALL
      SELECT model, dimensions, -1, NULL FROM old_rows
    ) AS moved GROUP BY model, dimensions
    ON CONFLICT (model, dimensions, shard) DO UPDATE
      SET texts = c.texts + excluded.texts,
        last_embedded_at = greatest(c.last_embedded_at, excluded.last_embedded_at);
    DELETE FROM embedding_coverage c USING old_rows o WHERE c.model = o.model AND c.dimensions = o.dimensions;
  ELSE
    INSERT INTO embedding_counts AS c (model, dimensions, shard, texts)
    SELECT model, dimensions, pg_backend_pid() % 16, -count(*) FROM old_rows GROUP BY model, dimensions
    ON CONFLICT (model, dimensions, shard) DO UPDATE SET texts = c.texts + excluded.texts;
    DELETE FROM embedding_coverage c WHERE c.model IN (SELECT model FROM old_rows);
  END IF;
  RETURN NULL;
END
$$;

-- Name: embeddings_ensure(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.embeddings_ensure() RETURNS text
    LANGUAGE plpgsql
    AS $_$
BEGIN
  IF to_regclass('embeddings') IS NOT NULL THEN
    BEGIN
      PERFORM embedding_counts_attach();
    EXCEPTION
      WHEN insufficient_privilege THEN NULL;
    END;
    RETURN 'ready';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
    IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
      RETURN 'not-installed';
    END IF;
    BEGIN
      CREATE EXTENSION IF NOT EXISTS vector;
    EXCEPTION
      WHEN insufficient_privilege THEN RETURN 'not-permitted';
      -- another process created it at the same moment
      WHEN unique_violation THEN NULL;
    END;
  END IF;
  BEGIN
    -- the type is resolved only now: the function itself is created without pgvector
    EXECUTE $ddl$
      CREATE TABLE IF NOT EXISTS "embeddings" (
      	"model" text NOT NULL,
      	"sha256" text NOT NULL,
      	"dimensions" integer NOT NULL,
      	"embedding" halfvec NOT NULL,
      	"tokens" integer NOT NULL,
      	"embedded_at" timestamp with time zone DEFAULT now() NOT NULL,
      	CONSTRAINT "embeddings_model_sha256_pk" PRIMARY KEY("model","sha256")
      );
    $ddl$;
  EXCEPTION
    WHEN unique_violation THEN NULL;
  END;
  BEGIN
    PERFORM embedding_counts_attach();
  EXCEPTION
    WHEN insufficient_privilege THEN NULL;
  END;
  RETURN 'ready';
END
$_$;

-- Name: event_flush(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.event_flush() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  WITH moved AS (DELETE FROM event_queue WHERE txid = NEW.txid RETURNING *)
  INSERT INTO events (type, data, source_id, video_id)
  SELECT type, data, source_id, video_id FROM moved ORDER BY seq;
  DELETE FROM event_flush WHERE txid = NEW.txid;
  RETURN NULL;
END
$$;

-- Name: event_flush_at_commit(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.event_flush_at_commit() RETURNS void
    LANGUAGE sql
    AS $$
  INSERT INTO event_flush (txid) VALUES (pg_current_xact_id()) ON CONFLICT DO NOTHING
$$;

-- Name: events_assign_id(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.events_assign_id() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(17750, 0);
  NEW.id := nextval('events_id_seq');
  RETURN NEW;
END
$$;

-- Name: events_notify(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.events_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  top bigint;
BEGIN
  SELECT max(id) INTO top FROM new_rows;
  IF top IS NOT NULL THEN
    PERFORM pg_notify('videosite_ingest_events', top::text);
  END IF;
  RETURN NULL;
END
$$;

-- Name: media_count_changes(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.media_count_changes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  delta jsonb;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM media_counts;
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT jsonb_agg(jsonb_build_array(platform, transcript_state, n)) INTO delta
    FROM (SELECT platform, transcript_state, count(*) AS n FROM new_rows GROUP BY 1, 2) x;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT jsonb_agg(jsonb_build_array(platform, transcript_state, -n)) INTO delta
    FROM (SELECT platform, transcript_state, count(*) AS n FROM old_rows GROUP BY 1, 2) x;
  ELSE
    SELECT jsonb_agg(jsonb_build_array(platform, transcript_state, n)) INTO delta
    FROM (SELECT platform, transcript_state, sum(d) AS n FROM (
        SELECT platform, transcript_state, 1 AS d FROM new_rows
        UNION ALL SELECT platform, transcript_state, -1 FROM old_rows) u
      GROUP BY 1, 2 HAVING sum(d) <> 0) x;
  END IF;
  IF delta IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('media_counts'), pg_backend_pid() % 16);
  INSERT INTO media_counts AS c (shard, platform, transcript_state, n)
  SELECT pg_backend_pid() % 16, e->>0, e->>1, (e->>2)::bigint FROM jsonb_array_elements(delta) AS e
  ON CONFLICT (shard, platform, transcript_state) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END
$$;

-- Name: media_passages_delete(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.media_passages_delete() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM passages WHERE kind = 'media';
    DELETE FROM search_index_queue WHERE kind = 'media';
  ELSE
    DELETE FROM passages p USING old_rows o WHERE p.kind = 'media' AND p.doc = o.url;
    DELETE FROM search_index_queue q USING old_rows o WHERE q.kind = 'media' AND q.video_id = o.url;
  END IF;
  RETURN NULL;
END
$$;

-- Name: page_counts_add(bigint, bigint, bigint); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.page_counts_add(d_stored bigint, d_gone bigint, d_versions bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF d_stored = 0 AND d_gone = 0 AND d_versions = 0 THEN
    RETURN;
  END IF;
  INSERT INTO page_counts AS c (shard, stored, gone, versions)
  VALUES (pg_backend_pid() % 16, d_stored, d_gone, d_versions)
  ON CONFLICT (shard) DO UPDATE
  SET stored = c.stored + excluded.stored, gone = c.gone + excluded.gone, versions = c.versions + excluded.versions;
END
$$;

-- Name: page_sections_not_kept(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.page_sections_not_kept() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  RETURN NULL;
END
$$;

-- Name: page_versions_count_changes(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.page_versions_count_changes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  dv bigint;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE page_counts SET versions = 0 WHERE versions <> 0;
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT count(*) INTO dv FROM new_rows;
  ELSE
    SELECT -count(*) INTO dv FROM old_rows;
  END IF;
  PERFORM page_counts_add(0, 0, dv);
  RETURN NULL;
END
$$;

-- Name: page_versions_insert(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.page_versions_insert() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF NEW.content IS NULL THEN
    RAISE EXCEPTION 'null value in column "content" of relation "page_versions" violates not-null constraint'
      USING ERRCODE = 'not_null_violation', COLUMN = 'content', TABLE = 'page_versions';
  END IF;
  INSERT INTO page_version_rows (url, content_sha256, name, description, og_url, content, count_characters, stored_at, job_id)
  VALUES (NEW.url, NEW.content_sha256, NEW.name, NEW.description, NEW.og_url,
    CASE WHEN EXISTS (
      SELECT 1 FROM pages p WHERE p.url = NEW.url AND p.content_sha256 = NEW.content_sha256 AND p.content = NEW.content)
    THEN NULL ELSE NEW.content || '' END,
    NEW.count_characters, NEW.stored_at, NEW.job_id);
  RETURN NEW;
END
$$;

-- Name: pages_count_changes(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.pages_count_changes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  ds bigint := 0; dg bigint := 0;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE page_counts SET stored = 0, gone = 0 WHERE stored <> 0 OR gone <> 0;
    RETURN NULL;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    SELECT ds + count(*) FILTER (WHERE TG_OP = 'INSERT'), dg + count(*) FILTER (WHERE gone_at IS NOT NULL)
    INTO ds, dg FROM new_rows;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    SELECT ds - count(*) FILTER (WHERE TG_OP = 'DELETE'), dg - count(*) FILTER (WHERE gone_at IS NOT NULL)
    INTO ds, dg FROM old_rows;
  END IF;
  PERFORM page_counts_add(ds, dg, 0);
  RETURN NULL;
END
$$;

-- Name: pages_current_version(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.pages_current_version() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE page_version_rows v SET content = p.content || ''
    FROM pages p
    WHERE v.content IS NULL AND v.url = p.url AND v.content_sha256 = p.content_sha256;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE page_version_rows v SET content = o.content || ''
    FROM old_rows o
    WHERE v.content IS NULL AND v.url = o.url AND v.content_sha256 = o.content_sha256;
  ELSIF TG_OP = 'UPDATE' THEN
    UPDATE page_version_rows v SET content = o.content || ''
    FROM old_rows o LEFT JOIN new_rows n ON n.url = o.url
    WHERE n.content_sha256 IS DISTINCT FROM o.content_sha256
      AND v.content IS NULL AND v.url = o.url AND v.content_sha256 = o.content_sha256;
    UPDATE page_version_rows v SET content = NULL
    FROM new_rows n LEFT JOIN old_rows o ON o.url = n.url
    WHERE o.content_sha256 IS DISTINCT FROM n.content_sha256
      AND v.content IS NOT NULL AND v.url = n.url AND v.content_sha256 = n.content_sha256 AND v.content = n.content;
  ELSE
    UPDATE page_version_rows v SET content = NULL
    FROM new_rows n
    WHERE v.content IS NOT NULL AND v.url = n.url AND v.content_sha256 = n.content_sha256 AND v.content = n.content;
  END IF;
  RETURN NULL;
END
$$;

-- Name: passage_removals_record(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.passage_removals_record() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO passage_removals (id, kind, doc, lang)
  SELECT o.id, o.kind, o.doc, o.lang FROM old_rows o
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

-- Name: passages_count_changes(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.passages_count_changes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  d bigint;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE passage_counts SET passages = 0 WHERE passages <> 0;
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT count(*) INTO d FROM new_rows;
  ELSE
    SELECT -count(*) INTO d FROM old_rows;
  END IF;
  IF d <> 0 THEN
    INSERT INTO passage_counts AS c (shard, passages) VALUES (pg_backend_pid() % 16, d)
    ON CONFLICT (shard) DO UPDATE SET passages = c.passages + excluded.passages;
  END IF;
  RETURN NULL;
END
$$;

-- Name: passages_search_fields(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.passages_search_fields() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.config := search_config(NEW.lang);
  NEW.tsv := CASE WHEN NEW.kind = 'media' THEN ''::tsvector
                  ELSE to_tsvector(NEW.config, search_document(NEW.text)) END;
  RETURN NEW;
END
$$;

-- Name: search_config(text); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.search_config(lang text) RETURNS regconfig
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $_$
  SELECT coalesce(
    (SELECT m.config FROM search_config_map() m WHERE m.lang = lower(split_part(replace($1, '_', '-'), '-', 1))),
    'simple'::regconfig)
$_$;

-- Name: search_config_map(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.search_config_map() RETURNS TABLE(lang text, config regconfig)
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
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

-- Name: search_document(text); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.search_document(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT CASE WHEN t ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]'
    THEN regexp_replace(t, '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])', chr(8203) || '\1' || chr(8203), 'g')
    ELSE t END
$$;

-- Name: search_index_build(text[], text[]); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.search_index_build(video_ids text[], langs text[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  NULL;
END
$$;

-- Name: search_index_pending(integer); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.search_index_pending(max_transcripts integer) RETURNS integer
    LANGUAGE plpgsql
    SET jit TO 'off'
    AS $$
DECLARE
  video_ids text[];
  langs text[];
BEGIN
  WITH taken AS (
    DELETE FROM search_index_queue q
    WHERE (q.kind, q.video_id, q.lang) IN (
      SELECT p.kind, p.video_id, p.lang FROM search_index_queue p WHERE p.kind = 'transcript'
      ORDER BY p.queued_at LIMIT greatest(max_transcripts, 1) FOR UPDATE SKIP LOCKED)
    RETURNING q.video_id, q.lang)
  SELECT array_agg(t.video_id), array_agg(t.lang) INTO video_ids, langs FROM taken t;
  IF video_ids IS NULL THEN
    RETURN 0;
  END IF;
  PERFORM search_index_build(video_ids, langs);
  RETURN cardinality(video_ids);
END
$$;

-- Name: source_stats_add(integer[], integer[], integer[]); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.source_stats_add(source_ids integer[], video_deltas integer[], transcript_deltas integer[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM 1 FROM source_stats WHERE source_id = ANY(source_ids) ORDER BY source_id FOR NO KEY UPDATE;
  UPDATE source_stats s SET videos = s.videos + d.v, transcripts = s.transcripts + d.t
  FROM unnest(source_ids, video_deltas, transcript_deltas) AS d(source_id, v, t)
  WHERE s.source_id = d.source_id AND (d.v <> 0 OR d.t <> 0);
END
$$;

-- Name: source_stats_recount(integer[]); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.source_stats_recount(source_ids integer[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM 1 FROM source_stats WHERE source_id = ANY(source_ids) ORDER BY source_id FOR NO KEY UPDATE;
  UPDATE source_stats s SET
    videos = (SELECT count(*) FROM source_videos sv JOIN videos v ON v.id = sv.video_id WHERE sv.source_id = s.source_id),
    transcripts = (SELECT count(*) FROM source_videos sv JOIN transcripts t ON t.video_id = sv.video_id WHERE sv.source_id = s.source_id),
    refreshed_at = now()
  WHERE s.source_id = ANY(source_ids);
END
$$;

-- Name: source_videos_source_stats(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.source_videos_source_stats() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  ids integer[]; v integer[]; t integer[];
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    PERFORM source_stats_recount(array(SELECT source_id FROM source_stats));
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    PERFORM source_stats_recount(array(SELECT DISTINCT source_id FROM new_rows));
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(d.source_id), array_agg(d.v), array_agg(d.t) INTO ids, v, t
    FROM (SELECT sv.source_id,
            count(*) FILTER (WHERE EXISTS (SELECT 1 FROM videos x WHERE x.id = sv.video_id))::int AS v,
            coalesce(sum((SELECT count(*) FROM transcripts x WHERE x.video_id = sv.video_id)), 0)::int AS t
          FROM new_rows sv GROUP BY 1) d;
  ELSE
    -- a source being removed takes its row along (cascade): nothing to count for it
    SELECT array_agg(d.source_id), array_agg(d.v), array_agg(d.t) INTO ids, v, t
    FROM (SELECT sv.source_id,
            -count(*) FILTER (WHERE EXISTS (SELECT 1 FROM videos x WHERE x.id = sv.video_id))::int AS v,
            -coalesce(sum((SELECT count(*) FROM transcripts x WHERE x.video_id = sv.video_id)), 0)::int AS t
          FROM old_rows sv WHERE EXISTS (SELECT 1 FROM sources s WHERE s.id = sv.source_id) GROUP BY 1) d;
  END IF;
  IF ids IS NOT NULL THEN
    PERFORM source_stats_add(ids, v, t);
  END IF;
  RETURN NULL;
END
$$;

-- Name: sources_source_stats(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.sources_source_stats() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO source_stats (source_id) SELECT id FROM new_rows ON CONFLICT (source_id) DO NOTHING;
  RETURN NULL;
END
$$;

-- Name: transcript_windows_sync(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.transcript_windows_sync() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO search_index_queue (video_id, lang)
    SELECT DISTINCT k.video_id, k.lang FROM new_rows k
    ON CONFLICT DO NOTHING;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO search_index_queue (video_id, lang)
    SELECT DISTINCT n.video_id, n.lang
    FROM new_rows n LEFT JOIN old_rows o ON o.video_id = n.video_id AND o.lang = n.lang
    WHERE o.content_sha256 IS DISTINCT FROM n.content_sha256
    ON CONFLICT DO NOTHING;
  ELSE
    DELETE FROM transcript_windows w USING old_rows o WHERE w.video_id = o.video_id AND w.lang = o.lang;
    DELETE FROM passages p USING old_rows o WHERE p.kind = 'transcript' AND p.doc = o.video_id AND p.lang = o.lang;
    DELETE FROM search_index_queue q USING old_rows o
    WHERE q.kind = 'transcript' AND q.video_id = o.video_id AND q.lang = o.lang;
  END IF;
  RETURN NULL;
END
$$;

-- Name: transcript_windows_truncate(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.transcript_windows_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM transcript_windows;
  DELETE FROM passages WHERE kind = 'transcript';
  DELETE FROM search_index_queue WHERE kind = 'transcript';
  RETURN NULL;
END
$$;

-- Name: transcripts_added(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.transcripts_added() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

-- Name: transcripts_changed(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.transcripts_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

-- Name: transcripts_removed(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.transcripts_removed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  UPDATE transcript_version_rows v SET text = o.text || '', chunks = o.chunks::text::jsonb
  FROM old_rows o
  WHERE v.text IS NULL AND v.video_id = o.video_id AND v.lang = o.lang AND v.content_sha256 = o.content_sha256;
  RETURN NULL;
END
$$;

-- Name: transcripts_source_stats(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.transcripts_source_stats() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  ids integer[]; n integer[];
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    PERFORM source_stats_recount(array(SELECT source_id FROM source_stats));
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(d.source_id), array_agg(d.n) INTO ids, n
    FROM (SELECT sv.source_id, count(*)::int AS n FROM new_rows t JOIN source_videos sv ON sv.video_id = t.video_id GROUP BY 1) d;
  ELSE
    SELECT array_agg(d.source_id), array_agg(d.n) INTO ids, n
    FROM (SELECT sv.source_id, -count(*)::int AS n FROM old_rows t JOIN source_videos sv ON sv.video_id = t.video_id GROUP BY 1) d;
  END IF;
  IF ids IS NOT NULL THEN
    PERFORM source_stats_add(ids, array_fill(0, array[cardinality(ids)]), n);
  END IF;
  RETURN NULL;
END
$$;

-- Name: transcripts_truncated(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.transcripts_truncated() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  UPDATE transcript_version_rows v SET text = t.text || '', chunks = t.chunks::text::jsonb
  FROM transcripts t
  WHERE v.text IS NULL AND v.video_id = t.video_id AND v.lang = t.lang AND v.content_sha256 = t.content_sha256;
  RETURN NULL;
END
$$;

-- Name: video_outcome_counts_changes(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.video_outcome_counts_changes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

-- Name: videos_added(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.videos_added() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO event_queue (type, data, source_id, video_id)
  SELECT 'video.added', jsonb_build_object('videoId', n.id, 'sourceId', b.source_id, 'jobId', n.last_job_id), b.source_id, n.id
  FROM new_rows n LEFT JOIN batches b ON b.job_id = n.last_job_id;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;

-- Name: videos_changed(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.videos_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  -- the contract's field names (the API's), old and new as JSON values; a view or like count
  -- alone is a measurement and makes nothing
  WITH d AS (
    SELECT n.id, n.last_job_id AS job_id, b.source_id,
      (SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}'::jsonb)
       FROM jsonb_each(jsonb_build_object(
         'title', CASE WHEN n.title IS DISTINCT FROM o.title THEN jsonb_build_object('old', o.title, 'new', n.title) END,
         'description', CASE WHEN n.description IS DISTINCT FROM o.description THEN jsonb_build_object('old', o.description, 'new', n.description) END,
         'tags', CASE WHEN n.tags IS DISTINCT FROM o.tags THEN jsonb_build_object('old', to_jsonb(o.tags), 'new', to_jsonb(n.tags)) END,
         'duration', CASE WHEN n.duration_s IS DISTINCT FROM o.duration_s THEN jsonb_build_object('old', o.duration_s, 'new', n.duration_s) END,
         'thumbnail', CASE WHEN n.thumbnail IS DISTINCT FROM o.thumbnail THEN jsonb_build_object('old', o.thumbnail, 'new', n.thumbnail) END,
         'transcriptLanguages', CASE WHEN n.transcript_languages IS DISTINCT FROM o.transcript_languages
           THEN jsonb_build_object('old', to_jsonb(o.transcript_languages), 'new', to_jsonb(n.transcript_languages)) END)) AS f
       WHERE f.value <> 'null'::jsonb) AS fields,
      CASE WHEN o.gone_at IS NULL AND n.gone_at IS NOT NULL THEN 'gone'
           WHEN o.gone_at IS NOT NULL AND n.gone_at IS NULL THEN 'returned' END AS gone_change,
      o.gone_reason AS old_reason, n.gone_reason AS new_reason
    FROM new_rows n JOIN old_rows o USING (id) LEFT JOIN batches b ON b.job_id = n.last_job_id
  ), changes AS (
    INSERT INTO video_changes (video_id, field, old_value, new_value, job_id)
    SELECT d.id, f.key, f.value->'old', f.value->'new', d.job_id FROM d, jsonb_each(d.fields) AS f
    UNION ALL
    SELECT d.id, 'gone',
      CASE WHEN d.gone_change = 'gone' THEN 'null'::jsonb ELSE to_jsonb(d.old_reason) END,
      CASE WHEN d.gone_change = 'gone' THEN to_jsonb(d.new_reason) ELSE 'null'::jsonb END, d.job_id
    FROM d WHERE d.gone_change IS NOT NULL
  )
  INSERT INTO event_queue (type, data, source_id, video_id)
  SELECT e.type, e.data, e.source_id, e.id FROM (
    SELECT 1 AS k, d.id, 'video.changed' AS type, d.source_id,
      jsonb_build_object('videoId', d.id, 'sourceId', d.source_id, 'jobId', d.job_id, 'fields', d.fields) AS data
    FROM d WHERE d.fields <> '{}'::jsonb
    UNION ALL
    SELECT 2, d.id, 'video.' || d.gone_change, d.source_id,
      jsonb_build_object('videoId', d.id, 'sourceId', d.source_id, 'jobId', d.job_id)
        || CASE WHEN d.gone_change = 'gone' THEN jsonb_build_object('reason', d.new_reason) ELSE '{}'::jsonb END
    FROM d WHERE d.gone_change IS NOT NULL
  ) e ORDER BY e.id, e.k;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;

-- Name: videos_source_stats(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.videos_source_stats() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  ids integer[]; n integer[];
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    PERFORM source_stats_recount(array(SELECT source_id FROM source_stats));
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(d.source_id), array_agg(d.n) INTO ids, n
    FROM (SELECT sv.source_id, count(*)::int AS n FROM new_rows v JOIN source_videos sv ON sv.video_id = v.id GROUP BY 1) d;
  ELSE
    SELECT array_agg(d.source_id), array_agg(d.n) INTO ids, n
    FROM (SELECT sv.source_id, -count(*)::int AS n FROM old_rows v JOIN source_videos sv ON sv.video_id = v.id GROUP BY 1) d;
  END IF;
  IF ids IS NOT NULL THEN
    PERFORM source_stats_add(ids, n, array_fill(0, array[cardinality(ids)]));
  END IF;
  RETURN NULL;
END
$$;

-- Name: webhook_endpoints_legacy_secret(); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.webhook_endpoints_legacy_secret() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
	INSERT INTO "webhook_secrets" ("endpoint_id", "format", "encryption", "material", "created_at")
	VALUES (NEW."id", 'legacy', 'none', convert_to(NEW."secret", 'UTF8'), NEW."created_at");
	RETURN NULL;
END $$;

-- Name: __drizzle_migrations; Type: TABLE; Schema: drizzle; Owner: -

CREATE TABLE drizzle.__drizzle_migrations (
    id integer NOT NULL,
    hash text NOT NULL,
    created_at bigint
);

-- Name: __drizzle_migrations_id_seq; Type: SEQUENCE; Schema: drizzle; Owner: -

CREATE SEQUENCE drizzle.__drizzle_migrations_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

-- Name: __drizzle_migrations_id_seq; Type: SEQUENCE OWNED BY; Schema: drizzle; Owner: -

ALTER SEQUENCE drizzle.__drizzle_migrations_id_seq OWNED BY drizzle.__drizzle_migrations.id;

-- Name: batch_counts; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.batch_counts (
    shard smallint NOT NULL,
    status text NOT NULL,
    batches bigint NOT NULL,
    credits_estimated bigint NOT NULL
);

-- Name: batch_item_counts; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.batch_item_counts (
    job_id text NOT NULL,
    state text NOT NULL,
    error_code text DEFAULT ''::text NOT NULL,
    n integer NOT NULL
);

-- Name: batch_items; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.batch_items (
    job_id text NOT NULL,
    video_id text NOT NULL,
    state text NOT NULL,
    error_code text,
    payload jsonb,
    landed_at timestamp with time zone,
    sunk_at timestamp with time zone,
    payload_raw text,
    reason text,
    resubmitted_in text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    reason_code text,
    payload_sha256 text,
    payload_bytes integer,
    payload_pruned_at timestamp with time zone,
    CONSTRAINT batch_items_state_ck CHECK ((state = ANY (ARRAY['processing'::text, 'landed'::text, 'sunk'::text, 'failed'::text, 'retryable'::text, 'quarantined'::text])))
);
ALTER TABLE ONLY public.batch_items ALTER COLUMN payload SET COMPRESSION lz4;
ALTER TABLE ONLY public.batch_items ALTER COLUMN payload_raw SET COMPRESSION lz4;

-- Name: batch_submissions; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.batch_submissions (
    id bigint NOT NULL,
    source_id integer,
    kind text NOT NULL,
    lang text,
    request jsonb NOT NULL,
    credits_estimated integer NOT NULL,
    used_credits_before bigint,
    state text NOT NULL,
    job_id text,
    detail text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT batch_submissions_kind_ck CHECK ((kind = ANY (ARRAY['video'::text, 'transcript'::text, 'page'::text, 'media'::text]))),
    CONSTRAINT batch_submissions_state_ck CHECK ((state = ANY (ARRAY['sending'::text, 'submitted'::text, 'failed'::text, 'unknown'::text, 'not-created'::text, 'lost'::text, 'released'::text])))
);

-- Name: batch_submissions_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.batch_submissions ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.batch_submissions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: batches; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.batches (
    job_id text NOT NULL,
    source_id integer,
    kind text NOT NULL,
    lang text,
    status text NOT NULL,
    error_code text,
    total integer,
    succeeded integer,
    failed integer,
    credits_estimated integer NOT NULL,
    submitted_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    polls integer DEFAULT 0 NOT NULL,
    request jsonb NOT NULL,
    text_only boolean,
    last_polled_at timestamp with time zone,
    next_poll_at timestamp with time zone,
    terminal_at timestamp with time zone,
    replay_of text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    upstream_status text,
    poll_failures integer DEFAULT 0 NOT NULL,
    reason text,
    not_found_since timestamp with time zone,
    mode text DEFAULT 'batch'::text NOT NULL,
    CONSTRAINT batches_kind_ck CHECK ((kind = ANY (ARRAY['video'::text, 'transcript'::text, 'page'::text, 'media'::text]))),
    CONSTRAINT batches_lang_ck CHECK (((kind = 'transcript'::text) OR (lang IS NULL))),
    CONSTRAINT batches_mode_ck CHECK (((mode = ANY (ARRAY['batch'::text, 'generate'::text, 'crawl'::text, 'scrape'::text, 'media'::text])) AND ((mode = 'batch'::text) OR ((mode = 'generate'::text) AND (kind = 'transcript'::text)) OR ((mode = 'generate'::text) AND (kind = 'media'::text)) OR ((mode = ANY (ARRAY['crawl'::text, 'scrape'::text])) AND (kind = 'page'::text)) OR ((mode = 'media'::text) AND (kind = 'media'::text))))),
    CONSTRAINT batches_status_ck CHECK ((status = ANY (ARRAY['submitted'::text, 'queued'::text, 'active'::text, 'completed'::text, 'failed'::text, 'expired'::text])))
);

-- Name: channels; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.channels (
    id text NOT NULL,
    name text,
    handle text,
    description text,
    subscriber_count bigint,
    video_count bigint,
    view_count bigint,
    thumbnail text,
    banner text,
    raw jsonb,
    fetched_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: credit_charges; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.credit_charges (
    id bigint NOT NULL,
    charged_at timestamp with time zone DEFAULT now() NOT NULL,
    source_id integer,
    sync_run_id bigint,
    endpoint text NOT NULL,
    status integer,
    credits integer NOT NULL,
    estimated integer,
    basis text NOT NULL,
    budget_delta integer DEFAULT 0 NOT NULL,
    key_fingerprint text,
    CONSTRAINT credit_charges_basis_ck CHECK ((basis = ANY (ARRAY['header'::text, 'price'::text, 'unanswered'::text]))),
    CONSTRAINT credit_charges_credits_ck CHECK ((credits >= 0))
);

-- Name: credit_charges_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.credit_charges ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.credit_charges_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: credit_reservations; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.credit_reservations (
    id bigint NOT NULL,
    source_id integer,
    credits integer NOT NULL,
    holder text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    released_at timestamp with time zone,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT credit_reservations_credits_ck CHECK ((credits >= 0))
);

-- Name: credit_reservations_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.credit_reservations ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.credit_reservations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: credit_snapshots; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.credit_snapshots (
    id bigint NOT NULL,
    taken_at timestamp with time zone DEFAULT now() NOT NULL,
    organization_id text,
    plan text,
    max_credits bigint,
    used_credits bigint,
    reason text,
    source_id integer
);

-- Name: credit_snapshots_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.credit_snapshots ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.credit_snapshots_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: embedding_claims; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.embedding_claims (
    model text NOT NULL,
    sha256 text NOT NULL,
    claimed_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    error text
);

-- Name: embedding_counts; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.embedding_counts (
    model text NOT NULL,
    dimensions integer NOT NULL,
    shard smallint NOT NULL,
    texts bigint DEFAULT 0 NOT NULL,
    last_embedded_at timestamp with time zone
);

-- Name: embedding_coverage; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.embedding_coverage (
    model text NOT NULL,
    dimensions integer NOT NULL,
    through_passage_id bigint NOT NULL,
    checked_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: embedding_refusals; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.embedding_refusals (
    day date NOT NULL,
    model text NOT NULL,
    first_at timestamp with time zone DEFAULT now() NOT NULL,
    last_at timestamp with time zone DEFAULT now() NOT NULL,
    refusals integer DEFAULT 1 NOT NULL,
    tokens_asked integer NOT NULL,
    tokens_spent bigint NOT NULL,
    budget bigint NOT NULL
);

-- Name: embedding_usage; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.embedding_usage (
    day date NOT NULL,
    model text NOT NULL,
    tokens bigint DEFAULT 0 NOT NULL,
    requests integer DEFAULT 0 NOT NULL,
    inputs integer DEFAULT 0 NOT NULL
);

-- Name: embeddings; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.embeddings (
    model text NOT NULL,
    sha256 text NOT NULL,
    dimensions integer NOT NULL,
    embedding public.halfvec NOT NULL,
    tokens integer NOT NULL,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: event_flush; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.event_flush (
    txid xid8 NOT NULL
);

-- Name: event_queue; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.event_queue (
    seq bigint NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    type text NOT NULL,
    data jsonb NOT NULL,
    source_id integer,
    video_id text
);

-- Name: event_queue_seq_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.event_queue ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.event_queue_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: events; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.events (
    id bigint NOT NULL,
    type text NOT NULL,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    data jsonb NOT NULL,
    source_id integer,
    video_id text,
    CONSTRAINT events_type_ck CHECK ((type = ANY (ARRAY['video.added'::text, 'video.changed'::text, 'video.gone'::text, 'video.returned'::text, 'transcript.added'::text, 'transcript.changed'::text, 'translation.refused'::text, 'page.added'::text, 'page.changed'::text, 'page.gone'::text, 'page.returned'::text, 'media.added'::text, 'media.changed'::text, 'batch.completed'::text, 'batch.expired'::text, 'source.synced'::text, 'source.failed'::text, 'account.hold'::text, 'account.hold_lifted'::text])))
);

-- Name: events_id_seq; Type: SEQUENCE; Schema: public; Owner: -

CREATE SEQUENCE public.events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

-- Name: events_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -

ALTER SEQUENCE public.events_id_seq OWNED BY public.events.id;

-- Name: export_cursors; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.export_cursors (
    name text NOT NULL,
    last_event_id bigint DEFAULT 0 NOT NULL,
    records bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: item_counts; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.item_counts (
    shard smallint NOT NULL,
    state text NOT NULL,
    error_code text DEFAULT ''::text NOT NULL,
    reason_code text DEFAULT ''::text NOT NULL,
    n bigint NOT NULL,
    pending boolean DEFAULT false NOT NULL
);

-- Name: media; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.media (
    url text NOT NULL,
    platform text NOT NULL,
    type text NOT NULL,
    media_id text,
    title text,
    description text,
    author_username text,
    author_display_name text,
    author jsonb,
    views bigint,
    likes bigint,
    comments bigint,
    shares bigint,
    media_info jsonb,
    duration_s double precision,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    posted_at timestamp with time zone,
    additional_data jsonb,
    metadata_sha256 text NOT NULL,
    transcript_state text NOT NULL,
    transcript_mode text,
    transcript_lang text,
    transcript_content jsonb,
    transcript_text text,
    transcript_sha256 text,
    transcript_attempts integer DEFAULT 0 NOT NULL,
    transcript_job_id text,
    transcript_reason text,
    transcript_at timestamp with time zone,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    job_id text,
    source_id integer,
    CONSTRAINT media_transcript_state_ck CHECK ((transcript_state = ANY (ARRAY['none'::text, 'pending'::text, 'stored'::text, 'empty'::text, 'failed'::text, 'expired'::text, 'over-budget'::text, 'retry'::text])))
);

-- Name: media_counts; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.media_counts (
    shard smallint NOT NULL,
    platform text NOT NULL,
    transcript_state text NOT NULL,
    n bigint DEFAULT 0 NOT NULL
);

-- Name: media_segments; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.media_segments (
    url text NOT NULL,
    n integer NOT NULL,
    offset_ms bigint,
    text text NOT NULL,
    tsv tsvector NOT NULL
);

-- Name: page_counts; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.page_counts (
    shard smallint NOT NULL,
    stored bigint DEFAULT 0 NOT NULL,
    gone bigint DEFAULT 0 NOT NULL,
    versions bigint DEFAULT 0 NOT NULL
);

-- Name: page_sections; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.page_sections (
    url text NOT NULL,
    n integer NOT NULL,
    headings text[] NOT NULL,
    anchor text,
    text text NOT NULL,
    tsv tsvector NOT NULL
);

-- Name: page_version_rows; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.page_version_rows (
    url text NOT NULL,
    content_sha256 text NOT NULL,
    name text,
    description text,
    og_url text,
    content text,
    count_characters bigint,
    stored_at timestamp with time zone DEFAULT now() NOT NULL,
    job_id text
);
ALTER TABLE ONLY public.page_version_rows ALTER COLUMN content SET COMPRESSION pglz;

-- Name: pages; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.pages (
    url text NOT NULL,
    name text,
    description text,
    og_url text,
    content text NOT NULL,
    count_characters bigint,
    content_sha256 text NOT NULL,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    gone_at timestamp with time zone,
    job_id text,
    source_id integer
);

-- Name: page_versions; Type: VIEW; Schema: public; Owner: -

CREATE VIEW public.page_versions AS
 SELECT v.url,
    v.content_sha256,
    v.name,
    v.description,
    v.og_url,
    COALESCE(v.content, ( SELECT p.content
           FROM public.pages p
          WHERE ((p.url = v.url) AND (p.content_sha256 = v.content_sha256)))) AS content,
    v.count_characters,
    v.stored_at,
    v.job_id
   FROM public.page_version_rows v;

-- Name: passage_counts; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.passage_counts (
    shard smallint NOT NULL,
    passages bigint DEFAULT 0 NOT NULL
);

-- Name: passages; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.passages (
    id bigint NOT NULL,
    kind text NOT NULL,
    doc text NOT NULL,
    lang text NOT NULL,
    n integer NOT NULL,
    text text NOT NULL,
    tokens integer NOT NULL,
    sha256 text NOT NULL,
    start_s double precision,
    end_s double precision,
    first_chunk integer,
    last_chunk integer,
    headings text[],
    anchor text,
    cut_at timestamp with time zone DEFAULT now() NOT NULL,
    config regconfig NOT NULL,
    tsv tsvector NOT NULL
);

-- Name: passages_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.passages ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.passages_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: passage_removals; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.passage_removals (
    id bigint NOT NULL,
    kind text NOT NULL,
    doc text NOT NULL,
    lang text NOT NULL,
    seq bigint DEFAULT nextval('public.passages_id_seq'::regclass) NOT NULL,
    removed_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: playlists; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.playlists (
    id text NOT NULL,
    title text,
    description text,
    video_count bigint,
    view_count bigint,
    last_updated timestamp with time zone,
    channel_id text,
    channel_name text,
    raw jsonb,
    fetched_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: prune_runs; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.prune_runs (
    id bigint NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    dry_run boolean DEFAULT false NOT NULL,
    trigger text NOT NULL,
    freed jsonb,
    error text
);

-- Name: prune_runs_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.prune_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.prune_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: schema_compat; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.schema_compat (
    tag text NOT NULL,
    created_at bigint NOT NULL,
    backward_compatible boolean NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: search_index_queue; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.search_index_queue (
    video_id text NOT NULL,
    lang text NOT NULL,
    queued_at timestamp with time zone DEFAULT now() NOT NULL,
    kind text DEFAULT 'transcript'::text NOT NULL,
    CONSTRAINT search_index_queue_kind_ck CHECK ((kind = ANY (ARRAY['transcript'::text, 'page'::text, 'media'::text])))
);

-- Name: source_media; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.source_media (
    source_id integer NOT NULL,
    url text NOT NULL,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: source_pages; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.source_pages (
    source_id integer NOT NULL,
    url text NOT NULL,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    gone_at timestamp with time zone
);

-- Name: source_stats; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.source_stats (
    source_id integer NOT NULL,
    videos integer DEFAULT 0 NOT NULL,
    transcripts integer DEFAULT 0 NOT NULL,
    refreshed_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: source_sync_leases; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.source_sync_leases (
    source_id bigint NOT NULL,
    holder text NOT NULL,
    acquired_at timestamp with time zone,
    expires_at timestamp with time zone NOT NULL
);

-- Name: source_videos; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.source_videos (
    source_id integer NOT NULL,
    video_id text NOT NULL,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    last_listed_at timestamp with time zone
);

-- Name: sources; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.sources (
    id integer NOT NULL,
    kind text NOT NULL,
    ref text NOT NULL,
    external_id text NOT NULL,
    max_videos integer NOT NULL,
    langs text[] DEFAULT '{}'::text[] NOT NULL,
    text_only boolean DEFAULT false NOT NULL,
    cron text,
    paused boolean DEFAULT false NOT NULL,
    last_synced_at timestamp with time zone,
    title text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    last_error_code text,
    last_error_at timestamp with time zone,
    initial_sync_done boolean DEFAULT false NOT NULL,
    include text[] DEFAULT '{}'::text[] NOT NULL,
    search jsonb,
    generate_missing boolean DEFAULT false NOT NULL,
    max_generate_minutes integer,
    max_credits_per_day integer,
    refresh_after_ms bigint,
    translate_langs text[] DEFAULT '{}'::text[] NOT NULL,
    max_translate_minutes integer,
    media_mode text,
    CONSTRAINT sources_include_ck CHECK ((include <@ ARRAY['shorts'::text, 'live'::text])),
    CONSTRAINT sources_kind_ck CHECK ((kind = ANY (ARRAY['playlist'::text, 'channel'::text, 'videos'::text, 'search'::text, 'website'::text, 'pages'::text, 'media'::text]))),
    CONSTRAINT sources_max_credits_per_day_ck CHECK (((max_credits_per_day IS NULL) OR (max_credits_per_day >= 1))),
    CONSTRAINT sources_max_generate_minutes_ck CHECK (((max_generate_minutes IS NULL) OR (max_generate_minutes >= 1))),
    CONSTRAINT sources_max_translate_minutes_ck CHECK (((max_translate_minutes IS NULL) OR (max_translate_minutes >= 1))),
    CONSTRAINT sources_max_videos_ck CHECK ((max_videos >= 1)),
    CONSTRAINT sources_media_mode_ck CHECK (((media_mode IS NULL) OR (media_mode = ANY (ARRAY['native'::text, 'auto'::text, 'generate'::text])))),
    CONSTRAINT sources_translate_budget_ck CHECK (((cardinality(translate_langs) = 0) OR (max_translate_minutes IS NOT NULL)))
);

-- Name: sources_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.sources ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.sources_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: sync_runs; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.sync_runs (
    id bigint NOT NULL,
    source_id integer,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    outcome text,
    detail text,
    videos_listed integer,
    videos_submitted integer,
    credits_estimated integer,
    job_ids text[],
    listing_credits integer,
    credits_billed integer,
    CONSTRAINT sync_runs_outcome_ck CHECK (((outcome IS NULL) OR (outcome = ANY (ARRAY['submitted'::text, 'up-to-date'::text, 'refused-credits'::text, 'refused-upstream'::text, 'error'::text, 'held'::text]))))
);

-- Name: sync_runs_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.sync_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.sync_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: transcript_version_rows; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.transcript_version_rows (
    id bigint NOT NULL,
    video_id text NOT NULL,
    lang text NOT NULL,
    content_sha256 text NOT NULL,
    text text,
    chunks jsonb,
    available_langs text[],
    job_id text,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    last_job_id text
);
ALTER TABLE ONLY public.transcript_version_rows ALTER COLUMN text SET COMPRESSION pglz;
ALTER TABLE ONLY public.transcript_version_rows ALTER COLUMN chunks SET COMPRESSION pglz;

-- Name: transcripts; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.transcripts (
    video_id text NOT NULL,
    lang text NOT NULL,
    text text NOT NULL,
    chunks jsonb,
    available_langs text[],
    content_sha256 text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    last_job_id text,
    text_only boolean,
    origin text DEFAULT 'captions'::text NOT NULL,
    translated_from text,
    translated_from_sha256 text,
    CONSTRAINT transcripts_origin_ck CHECK ((origin = ANY (ARRAY['captions'::text, 'generated'::text, 'translation'::text])))
);
ALTER TABLE ONLY public.transcripts ALTER COLUMN text SET COMPRESSION lz4;
ALTER TABLE ONLY public.transcripts ALTER COLUMN chunks SET COMPRESSION lz4;

-- Name: transcript_versions; Type: VIEW; Schema: public; Owner: -

CREATE VIEW public.transcript_versions AS
 SELECT v.id,
    v.video_id,
    v.lang,
    v.content_sha256,
    COALESCE(v.text, ( SELECT t.text
           FROM public.transcripts t
          WHERE ((t.video_id = v.video_id) AND (t.lang = v.lang)))) AS text,
        CASE
            WHEN (v.text IS NULL) THEN ( SELECT t.chunks
               FROM public.transcripts t
              WHERE ((t.video_id = v.video_id) AND (t.lang = v.lang)))
            ELSE v.chunks
        END AS chunks,
    v.available_langs,
    v.job_id,
    v.first_seen_at,
    v.last_seen_at,
    v.last_job_id
   FROM public.transcript_version_rows v;

-- Name: transcript_versions_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.transcript_version_rows ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.transcript_versions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: transcript_window_rows; Type: VIEW; Schema: public; Owner: -

CREATE VIEW public.transcript_window_rows AS
 SELECT t.video_id,
    t.lang,
    g.n,
    p.starts[((g.n * 4) + 1)] AS start_s,
    p.ends[LEAST(((g.n * 4) + 5), cardinality(p.texts))] AS end_s,
    w.text,
    cfg.config,
    to_tsvector(cfg.config, public.search_document(w.text)) AS tsv
   FROM ((((public.transcripts t
     CROSS JOIN LATERAL ( SELECT public.search_config(t.lang) AS config
         OFFSET 0) cfg)
     CROSS JOIN LATERAL ( SELECT array_agg(COALESCE((c.v ->> 'text'::text), ''::text) ORDER BY c.i) AS texts,
            array_agg(
                CASE
                    WHEN (jsonb_typeof((c.v -> 'offset'::text)) = 'number'::text) THEN (((c.v ->> 'offset'::text))::double precision / (1000)::double precision)
                    ELSE NULL::double precision
                END ORDER BY c.i) AS starts,
            array_agg(
                CASE
                    WHEN ((jsonb_typeof((c.v -> 'offset'::text)) = 'number'::text) AND (jsonb_typeof((c.v -> 'duration'::text)) = 'number'::text)) THEN ((((c.v ->> 'offset'::text))::double precision + ((c.v ->> 'duration'::text))::double precision) / (1000)::double precision)
                    ELSE NULL::double precision
                END ORDER BY c.i) AS ends,
            ' '::text AS sep
           FROM jsonb_array_elements(
                CASE
                    WHEN (jsonb_typeof(t.chunks) = 'array'::text) THEN t.chunks
                    ELSE '[]'::jsonb
                END) WITH ORDINALITY c(v, i)
          WHERE (jsonb_typeof(c.v) = 'object'::text)
         HAVING (count(*) > 0)
        UNION ALL
         SELECT ARRAY( SELECT array_to_string(tok.a[((k.k * 12) + 1):((k.k * 12) + 12)], ''::text) AS array_to_string
                   FROM generate_series(0, ((cardinality(tok.a) - 1) / 12)) k(k)
                  ORDER BY k.k) AS "array",
            NULL::double precision[],
            NULL::double precision[],
            ''::text
           FROM ( SELECT ARRAY( SELECT m.m[1] AS m
                           FROM regexp_matches(t.text, '\S{1,40}\s*'::text, 'g'::text) m(m)) AS a) tok
          WHERE ((t.chunks IS NULL) AND (cardinality(tok.a) > 0))) p)
     CROSS JOIN LATERAL generate_series(0, ((cardinality(p.texts) - 2) / 4)) g(n))
     CROSS JOIN LATERAL ( SELECT rtrim(array_to_string(p.texts[((g.n * 4) + 1):((g.n * 4) + 5)], p.sep)) AS text) w);

-- Name: transcript_windows; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.transcript_windows (
    video_id text NOT NULL,
    lang text NOT NULL,
    n integer NOT NULL,
    start_s double precision,
    end_s double precision,
    text text NOT NULL,
    config regconfig NOT NULL,
    tsv tsvector NOT NULL
);

-- Name: translations; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.translations (
    id bigint NOT NULL,
    video_id text NOT NULL,
    lang text NOT NULL,
    from_lang text NOT NULL,
    from_sha256 text NOT NULL,
    source_id integer,
    state text NOT NULL,
    duration_s double precision NOT NULL,
    minutes integer NOT NULL,
    credits_estimated integer NOT NULL,
    detail text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT translations_state_ck CHECK ((state = ANY (ARRAY['sending'::text, 'stored'::text, 'failed'::text, 'unknown'::text, 'refused-budget'::text, 'released'::text])))
);

-- Name: translations_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.translations ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.translations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: upstream_hold_events; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.upstream_hold_events (
    id bigint NOT NULL,
    code text NOT NULL,
    event text NOT NULL,
    reason text,
    at timestamp with time zone DEFAULT now() NOT NULL,
    key_fingerprint text
);

-- Name: upstream_hold_events_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.upstream_hold_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.upstream_hold_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: upstream_holds; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.upstream_holds (
    code text NOT NULL,
    scope text NOT NULL,
    reason text NOT NULL,
    since timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    key_fingerprint text,
    CONSTRAINT upstream_holds_code_ck CHECK ((code = ANY (ARRAY['unauthorized'::text, 'upgrade-required'::text, 'credits'::text]))),
    CONSTRAINT upstream_holds_scope_ck CHECK ((scope = ANY (ARRAY['all'::text, 'submit'::text])))
);

-- Name: video_changes; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.video_changes (
    id bigint NOT NULL,
    video_id text NOT NULL,
    field text NOT NULL,
    old_value jsonb,
    new_value jsonb,
    job_id text,
    changed_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: video_changes_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.video_changes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.video_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: video_outcome_counts; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.video_outcome_counts (
    shard smallint NOT NULL,
    kind text NOT NULL,
    lang text NOT NULL,
    state text NOT NULL,
    error_code text NOT NULL,
    delivered_lang text NOT NULL,
    n bigint NOT NULL
);

-- Name: video_sync; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.video_sync (
    video_id text NOT NULL,
    kind text NOT NULL,
    lang text DEFAULT ''::text NOT NULL,
    last_job_id text,
    last_state text,
    last_error_code text,
    attempts integer DEFAULT 0 NOT NULL,
    next_check_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    submission_id bigint,
    text_only boolean DEFAULT false NOT NULL,
    delivered_lang text,
    CONSTRAINT video_sync_kind_ck CHECK ((kind = ANY (ARRAY['video'::text, 'transcript'::text, 'page'::text, 'media'::text])))
);

-- Name: videos; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.videos (
    id text NOT NULL,
    title text,
    description text,
    duration_s double precision,
    channel_id text,
    channel_name text,
    tags text[],
    thumbnail text,
    upload_date timestamp with time zone,
    view_count bigint,
    like_count bigint,
    transcript_languages text[],
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    last_job_id text,
    gone_at timestamp with time zone,
    gone_reason text
);
ALTER TABLE ONLY public.videos ALTER COLUMN description SET COMPRESSION lz4;

-- Name: webhook_deliveries; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.webhook_deliveries (
    id bigint NOT NULL,
    endpoint_id integer NOT NULL,
    event_id bigint NOT NULL,
    event_type text NOT NULL,
    attempt integer NOT NULL,
    status text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    duration_ms integer NOT NULL,
    response_code integer,
    response_body text,
    error text,
    CONSTRAINT webhook_deliveries_status_ck CHECK ((status = ANY (ARRAY['delivered'::text, 'failed'::text])))
);

-- Name: webhook_deliveries_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.webhook_deliveries ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.webhook_deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: webhook_endpoints; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.webhook_endpoints (
    id integer NOT NULL,
    url text NOT NULL,
    event_types text[],
    secret text,
    enabled boolean DEFAULT true NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    cursor bigint DEFAULT 0 NOT NULL,
    failing_since timestamp with time zone,
    failures integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone,
    disabled_at timestamp with time zone,
    disabled_reason text,
    last_delivered_at timestamp with time zone,
    lease_owner text,
    lease_expires_at timestamp with time zone,
    allow_private boolean DEFAULT false NOT NULL,
    last_turn_at timestamp with time zone,
    CONSTRAINT webhook_endpoints_url_ck CHECK ((url ~ '^https?://'::text)),
    CONSTRAINT webhook_endpoints_url_credentials_ck CHECK ((url !~ '^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*@'::text))
);

-- Name: webhook_endpoints_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.webhook_endpoints ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.webhook_endpoints_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: webhook_secrets; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.webhook_secrets (
    id integer NOT NULL,
    endpoint_id integer NOT NULL,
    format text NOT NULL,
    encryption text NOT NULL,
    key_id text,
    material bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    CONSTRAINT webhook_secrets_encryption_ck CHECK ((encryption = ANY (ARRAY['none'::text, 'aes-256-gcm'::text]))),
    CONSTRAINT webhook_secrets_format_ck CHECK ((format = ANY (ARRAY['whsec'::text, 'legacy'::text]))),
    CONSTRAINT webhook_secrets_key_id_ck CHECK (((encryption = 'none'::text) = (key_id IS NULL)))
);

-- Name: webhook_secrets_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.webhook_secrets ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.webhook_secrets_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: __drizzle_migrations id; Type: DEFAULT; Schema: drizzle; Owner: -

ALTER TABLE ONLY drizzle.__drizzle_migrations ALTER COLUMN id SET DEFAULT nextval('drizzle.__drizzle_migrations_id_seq'::regclass);

-- Name: page_versions stored_at; Type: DEFAULT; Schema: public; Owner: -

ALTER TABLE ONLY public.page_versions ALTER COLUMN stored_at SET DEFAULT now();

-- Name: __drizzle_migrations __drizzle_migrations_pkey; Type: CONSTRAINT; Schema: drizzle; Owner: -

ALTER TABLE ONLY drizzle.__drizzle_migrations
    ADD CONSTRAINT __drizzle_migrations_pkey PRIMARY KEY (id);

-- Name: batch_counts batch_counts_shard_status_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.batch_counts
    ADD CONSTRAINT batch_counts_shard_status_pk PRIMARY KEY (shard, status);

-- Name: batch_item_counts batch_item_counts_job_id_state_error_code_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.batch_item_counts
    ADD CONSTRAINT batch_item_counts_job_id_state_error_code_pk PRIMARY KEY (job_id, state, error_code);

-- Name: batch_items batch_items_job_id_video_id_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.batch_items
    ADD CONSTRAINT batch_items_job_id_video_id_pk PRIMARY KEY (job_id, video_id);

-- Name: batch_submissions batch_submissions_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.batch_submissions
    ADD CONSTRAINT batch_submissions_pkey PRIMARY KEY (id);

-- Name: batches batches_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.batches
    ADD CONSTRAINT batches_pkey PRIMARY KEY (job_id);

-- Name: channels channels_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.channels
    ADD CONSTRAINT channels_pkey PRIMARY KEY (id);

-- Name: credit_charges credit_charges_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.credit_charges
    ADD CONSTRAINT credit_charges_pkey PRIMARY KEY (id);

-- Name: credit_reservations credit_reservations_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.credit_reservations
    ADD CONSTRAINT credit_reservations_pkey PRIMARY KEY (id);

-- Name: credit_snapshots credit_snapshots_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.credit_snapshots
    ADD CONSTRAINT credit_snapshots_pkey PRIMARY KEY (id);

-- Name: embedding_claims embedding_claims_model_sha256_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.embedding_claims
    ADD CONSTRAINT embedding_claims_model_sha256_pk PRIMARY KEY (model, sha256);

-- Name: embedding_counts embedding_counts_model_dimensions_shard_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.embedding_counts
    ADD CONSTRAINT embedding_counts_model_dimensions_shard_pk PRIMARY KEY (model, dimensions, shard);

-- Name: embedding_coverage embedding_coverage_model_dimensions_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.embedding_coverage
    ADD CONSTRAINT embedding_coverage_model_dimensions_pk PRIMARY KEY (model, dimensions);

-- Name: embedding_refusals embedding_refusals_day_model_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.embedding_refusals
    ADD CONSTRAINT embedding_refusals_day_model_pk PRIMARY KEY (day, model);

-- Name: embedding_usage embedding_usage_day_model_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.embedding_usage
    ADD CONSTRAINT embedding_usage_day_model_pk PRIMARY KEY (day, model);

-- Name: embeddings embeddings_model_sha256_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.embeddings
    ADD CONSTRAINT embeddings_model_sha256_pk PRIMARY KEY (model, sha256);

-- Name: event_flush event_flush_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.event_flush
    ADD CONSTRAINT event_flush_pkey PRIMARY KEY (txid);

-- Name: event_queue event_queue_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.event_queue
    ADD CONSTRAINT event_queue_pkey PRIMARY KEY (seq);

-- Name: events events_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id);

-- Name: export_cursors export_cursors_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.export_cursors
    ADD CONSTRAINT export_cursors_pkey PRIMARY KEY (name);

-- Name: item_counts item_counts_shard_state_error_code_reason_code_pending_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.item_counts
    ADD CONSTRAINT item_counts_shard_state_error_code_reason_code_pending_pk PRIMARY KEY (shard, state, error_code, reason_code, pending);

-- Name: media_counts media_counts_shard_platform_transcript_state_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.media_counts
    ADD CONSTRAINT media_counts_shard_platform_transcript_state_pk PRIMARY KEY (shard, platform, transcript_state);

-- Name: media media_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.media
    ADD CONSTRAINT media_pkey PRIMARY KEY (url);

-- Name: media_segments media_segments_url_n_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.media_segments
    ADD CONSTRAINT media_segments_url_n_pk PRIMARY KEY (url, n);

-- Name: page_counts page_counts_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.page_counts
    ADD CONSTRAINT page_counts_pkey PRIMARY KEY (shard);

-- Name: page_sections page_sections_url_n_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.page_sections
    ADD CONSTRAINT page_sections_url_n_pk PRIMARY KEY (url, n);

-- Name: page_version_rows page_version_rows_url_content_sha256_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.page_version_rows
    ADD CONSTRAINT page_version_rows_url_content_sha256_pk PRIMARY KEY (url, content_sha256);

-- Name: pages pages_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.pages
    ADD CONSTRAINT pages_pkey PRIMARY KEY (url);

-- Name: passage_counts passage_counts_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.passage_counts
    ADD CONSTRAINT passage_counts_pkey PRIMARY KEY (shard);

-- Name: passage_removals passage_removals_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.passage_removals
    ADD CONSTRAINT passage_removals_pkey PRIMARY KEY (id);

-- Name: passages passages_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.passages
    ADD CONSTRAINT passages_pkey PRIMARY KEY (id);

-- Name: playlists playlists_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.playlists
    ADD CONSTRAINT playlists_pkey PRIMARY KEY (id);

-- Name: prune_runs prune_runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.prune_runs
    ADD CONSTRAINT prune_runs_pkey PRIMARY KEY (id);

-- Name: schema_compat schema_compat_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.schema_compat
    ADD CONSTRAINT schema_compat_pkey PRIMARY KEY (tag);

-- Name: search_index_queue search_index_queue_kind_video_id_lang_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.search_index_queue
    ADD CONSTRAINT search_index_queue_kind_video_id_lang_pk PRIMARY KEY (kind, video_id, lang);

-- Name: source_media source_media_source_id_url_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_media
    ADD CONSTRAINT source_media_source_id_url_pk PRIMARY KEY (source_id, url);

-- Name: source_pages source_pages_source_id_url_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_pages
    ADD CONSTRAINT source_pages_source_id_url_pk PRIMARY KEY (source_id, url);

-- Name: source_stats source_stats_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_stats
    ADD CONSTRAINT source_stats_pkey PRIMARY KEY (source_id);

-- Name: source_sync_leases source_sync_leases_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_sync_leases
    ADD CONSTRAINT source_sync_leases_pkey PRIMARY KEY (source_id);

-- Name: source_videos source_videos_source_id_video_id_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_videos
    ADD CONSTRAINT source_videos_source_id_video_id_pk PRIMARY KEY (source_id, video_id);

-- Name: sources sources_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.sources
    ADD CONSTRAINT sources_pkey PRIMARY KEY (id);

-- Name: sync_runs sync_runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.sync_runs
    ADD CONSTRAINT sync_runs_pkey PRIMARY KEY (id);

-- Name: transcript_version_rows transcript_versions_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.transcript_version_rows
    ADD CONSTRAINT transcript_versions_pkey PRIMARY KEY (id);

-- Name: transcript_windows transcript_windows_video_id_lang_n_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.transcript_windows
    ADD CONSTRAINT transcript_windows_video_id_lang_n_pk PRIMARY KEY (video_id, lang, n);

-- Name: transcripts transcripts_video_id_lang_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.transcripts
    ADD CONSTRAINT transcripts_video_id_lang_pk PRIMARY KEY (video_id, lang);

-- Name: translations translations_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.translations
    ADD CONSTRAINT translations_pkey PRIMARY KEY (id);

-- Name: upstream_hold_events upstream_hold_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.upstream_hold_events
    ADD CONSTRAINT upstream_hold_events_pkey PRIMARY KEY (id);

-- Name: video_changes video_changes_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.video_changes
    ADD CONSTRAINT video_changes_pkey PRIMARY KEY (id);

-- Name: video_outcome_counts video_outcome_counts_shard_kind_lang_state_error_code_delivered; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.video_outcome_counts
    ADD CONSTRAINT video_outcome_counts_shard_kind_lang_state_error_code_delivered PRIMARY KEY (shard, kind, lang, state, error_code, delivered_lang);

-- Name: video_sync video_sync_video_id_kind_lang_pk; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.video_sync
    ADD CONSTRAINT video_sync_video_id_kind_lang_pk PRIMARY KEY (video_id, kind, lang);

-- Name: videos videos_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.videos
    ADD CONSTRAINT videos_pkey PRIMARY KEY (id);

-- Name: webhook_deliveries webhook_deliveries_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);

-- Name: webhook_endpoints webhook_endpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id);

-- Name: webhook_secrets webhook_secrets_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.webhook_secrets
    ADD CONSTRAINT webhook_secrets_pkey PRIMARY KEY (id);

-- Name: batch_items_landed_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batch_items_landed_idx ON public.batch_items USING btree (job_id, video_id) WHERE (state = 'landed'::text);

-- Name: batch_items_prunable_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batch_items_prunable_idx ON public.batch_items USING btree (COALESCE(sunk_at, landed_at, updated_at)) WHERE ((payload_pruned_at IS NULL) AND (state = ANY (ARRAY['sunk'::text, 'failed'::text])));

-- Name: batch_items_quarantined_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batch_items_quarantined_idx ON public.batch_items USING btree (reason_code) WHERE (state = 'quarantined'::text);

-- Name: batch_items_retryable_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batch_items_retryable_idx ON public.batch_items USING btree (job_id, video_id) WHERE ((state = 'retryable'::text) AND (resubmitted_in IS NULL));

-- Name: batch_items_video_id_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batch_items_video_id_idx ON public.batch_items USING btree (video_id);

-- Name: batch_submissions_pending_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batch_submissions_pending_idx ON public.batch_submissions USING btree (source_id, kind) WHERE (state = ANY (ARRAY['sending'::text, 'unknown'::text, 'lost'::text]));

-- Name: batches_in_flight_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batches_in_flight_idx ON public.batches USING btree (status, next_poll_at) WHERE (status = ANY (ARRAY['submitted'::text, 'queued'::text, 'active'::text]));

-- Name: batches_source_id_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batches_source_id_idx ON public.batches USING btree (source_id, submitted_at);

-- Name: batches_submitted_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batches_submitted_at_idx ON public.batches USING btree (submitted_at);

-- Name: batches_terminal_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX batches_terminal_at_idx ON public.batches USING btree (terminal_at) WHERE (terminal_at IS NOT NULL);

-- Name: credit_charges_charged_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX credit_charges_charged_at_idx ON public.credit_charges USING btree (charged_at);

-- Name: credit_charges_source_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX credit_charges_source_idx ON public.credit_charges USING btree (source_id, charged_at);

-- Name: credit_charges_sync_run_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX credit_charges_sync_run_idx ON public.credit_charges USING btree (sync_run_id) WHERE (sync_run_id IS NOT NULL);

-- Name: credit_reservations_open_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX credit_reservations_open_idx ON public.credit_reservations USING btree (expires_at) WHERE (released_at IS NULL);

-- Name: credit_reservations_released_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX credit_reservations_released_idx ON public.credit_reservations USING btree (released_at);

-- Name: credit_snapshots_taken_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX credit_snapshots_taken_at_idx ON public.credit_snapshots USING btree (taken_at);

-- Name: event_queue_txid_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX event_queue_txid_idx ON public.event_queue USING btree (txid);

-- Name: events_occurred_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX events_occurred_at_idx ON public.events USING btree (occurred_at);

-- Name: events_source_id_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX events_source_id_idx ON public.events USING btree (source_id, id) WHERE (source_id IS NOT NULL);

-- Name: events_type_id_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX events_type_id_idx ON public.events USING btree (type, id);

-- Name: events_video_id_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX events_video_id_idx ON public.events USING btree (video_id, id) WHERE (video_id IS NOT NULL);

-- Name: media_segments_tsv_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX media_segments_tsv_idx ON public.media_segments USING gin (tsv);

-- Name: media_updated_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX media_updated_at_idx ON public.media USING btree (updated_at);

-- Name: page_sections_tsv_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX page_sections_tsv_idx ON public.page_sections USING gin (tsv);

-- Name: pages_updated_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX pages_updated_at_idx ON public.pages USING btree (updated_at);

-- Name: passage_removals_removed_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX passage_removals_removed_at_idx ON public.passage_removals USING btree (removed_at);

-- Name: passage_removals_seq_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX passage_removals_seq_idx ON public.passage_removals USING btree (seq);

-- Name: passages_cut_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX passages_cut_at_idx ON public.passages USING btree (cut_at, id);

-- Name: passages_doc_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX passages_doc_idx ON public.passages USING btree (kind, doc, lang, n);

-- Name: passages_page_tsv_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX passages_page_tsv_idx ON public.passages USING gin (tsv) WHERE (kind = 'page'::text);

-- Name: passages_sha256_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX passages_sha256_idx ON public.passages USING btree (sha256);

-- Name: passages_transcript_tsv_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX passages_transcript_tsv_idx ON public.passages USING gin (tsv) WHERE (kind = 'transcript'::text);

-- Name: prune_runs_started_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX prune_runs_started_idx ON public.prune_runs USING btree (started_at);

-- Name: schema_compat_created_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX schema_compat_created_at_idx ON public.schema_compat USING btree (created_at);

-- Name: search_index_queue_queued_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX search_index_queue_queued_at_idx ON public.search_index_queue USING btree (queued_at);

-- Name: source_media_url_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX source_media_url_idx ON public.source_media USING btree (url);

-- Name: source_pages_url_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX source_pages_url_idx ON public.source_pages USING btree (url);

-- Name: source_videos_video_id_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX source_videos_video_id_idx ON public.source_videos USING btree (video_id);

-- Name: sources_kind_external_id_uq; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX sources_kind_external_id_uq ON public.sources USING btree (kind, external_id);

-- Name: sources_last_synced_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX sources_last_synced_idx ON public.sources USING btree (last_synced_at);

-- Name: sync_runs_source_started_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX sync_runs_source_started_idx ON public.sync_runs USING btree (source_id, started_at);

-- Name: sync_runs_started_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX sync_runs_started_idx ON public.sync_runs USING btree (started_at);

-- Name: transcript_versions_content_uq; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX transcript_versions_content_uq ON public.transcript_version_rows USING btree (video_id, lang, content_sha256);

-- Name: transcript_windows_tsv_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX transcript_windows_tsv_idx ON public.transcript_windows USING gin (tsv);

-- Name: translations_bought_uq; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX translations_bought_uq ON public.translations USING btree (video_id, lang, from_sha256) WHERE (state = ANY (ARRAY['sending'::text, 'stored'::text, 'failed'::text, 'unknown'::text]));

-- Name: translations_refused_uq; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX translations_refused_uq ON public.translations USING btree (source_id, video_id, lang) WHERE (state = 'refused-budget'::text);

-- Name: translations_source_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX translations_source_idx ON public.translations USING btree (source_id, state);

-- Name: upstream_hold_events_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX upstream_hold_events_at_idx ON public.upstream_hold_events USING btree (at);

-- Name: upstream_holds_code_key_uq; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX upstream_holds_code_key_uq ON public.upstream_holds USING btree (code, key_fingerprint);

-- Name: video_changes_video_id_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX video_changes_video_id_idx ON public.video_changes USING btree (video_id, id);

-- Name: video_sync_next_check_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX video_sync_next_check_idx ON public.video_sync USING btree (next_check_at) WHERE (next_check_at IS NOT NULL);

-- Name: video_sync_pending_claims_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX video_sync_pending_claims_idx ON public.video_sync USING btree (submission_id) WHERE (last_job_id IS NULL);

-- Name: videos_channel_id_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX videos_channel_id_idx ON public.videos USING btree (channel_id);

-- Name: videos_gone_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX videos_gone_idx ON public.videos USING btree (gone_reason) WHERE (gone_at IS NOT NULL);

-- Name: webhook_deliveries_endpoint_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX webhook_deliveries_endpoint_idx ON public.webhook_deliveries USING btree (endpoint_id, id);

-- Name: webhook_deliveries_started_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX webhook_deliveries_started_idx ON public.webhook_deliveries USING btree (started_at);

-- Name: webhook_secrets_endpoint_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX webhook_secrets_endpoint_idx ON public.webhook_secrets USING btree (endpoint_id, id);

-- Name: batch_items batch_items_count_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER batch_items_count_delete AFTER DELETE ON public.batch_items REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.batch_items_count_changes();

-- Name: batch_items batch_items_count_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER batch_items_count_insert AFTER INSERT ON public.batch_items REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.batch_items_count_changes();

-- Name: batch_items batch_items_count_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER batch_items_count_truncate AFTER TRUNCATE ON public.batch_items FOR EACH STATEMENT EXECUTE FUNCTION public.batch_items_count_changes();

-- Name: batch_items batch_items_count_update; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER batch_items_count_update AFTER UPDATE ON public.batch_items REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.batch_items_count_changes();

-- Name: batches batches_count_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER batches_count_delete AFTER DELETE ON public.batches REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.batches_count_changes();

-- Name: batches batches_count_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER batches_count_insert AFTER INSERT ON public.batches REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.batches_count_changes();

-- Name: batches batches_count_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER batches_count_truncate AFTER TRUNCATE ON public.batches FOR EACH STATEMENT EXECUTE FUNCTION public.batches_count_changes();

-- Name: batches batches_count_update; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER batches_count_update AFTER UPDATE ON public.batches REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.batches_count_changes();

-- Name: embeddings embeddings_count_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER embeddings_count_delete AFTER DELETE ON public.embeddings REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.embeddings_count_changes();

-- Name: embeddings embeddings_count_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER embeddings_count_insert AFTER INSERT ON public.embeddings REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.embeddings_count_changes();

-- Name: embeddings embeddings_count_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER embeddings_count_truncate AFTER TRUNCATE ON public.embeddings FOR EACH STATEMENT EXECUTE FUNCTION public.embeddings_count_changes();

-- Name: embeddings embeddings_count_update; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER embeddings_count_update AFTER UPDATE ON public.embeddings REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.embeddings_count_changes();

-- Name: event_flush event_flush; Type: TRIGGER; Schema: public; Owner: -

CREATE CONSTRAINT TRIGGER event_flush AFTER INSERT ON public.event_flush DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.event_flush();

-- Name: events events_assign_id; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER events_assign_id BEFORE INSERT ON public.events FOR EACH ROW EXECUTE FUNCTION public.events_assign_id();

-- Name: events events_notify; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER events_notify AFTER INSERT ON public.events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.events_notify();

-- Name: media media_count_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER media_count_delete AFTER DELETE ON public.media REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.media_count_changes();

-- Name: media media_count_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER media_count_insert AFTER INSERT ON public.media REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.media_count_changes();

-- Name: media media_count_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER media_count_truncate AFTER TRUNCATE ON public.media FOR EACH STATEMENT EXECUTE FUNCTION public.media_count_changes();

-- Name: media media_count_update; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER media_count_update AFTER UPDATE ON public.media REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.media_count_changes();

-- Name: media media_passages_deleted; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER media_passages_deleted AFTER DELETE ON public.media REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.media_passages_delete();

-- Name: media media_passages_truncated; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER media_passages_truncated AFTER TRUNCATE ON public.media FOR EACH STATEMENT EXECUTE FUNCTION public.media_passages_delete();

-- Name: page_sections page_sections_not_kept; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER page_sections_not_kept BEFORE INSERT ON public.page_sections FOR EACH ROW EXECUTE FUNCTION public.page_sections_not_kept();

-- Name: page_version_rows page_versions_count_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER page_versions_count_delete AFTER DELETE ON public.page_version_rows REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.page_versions_count_changes();

-- Name: page_version_rows page_versions_count_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER page_versions_count_insert AFTER INSERT ON public.page_version_rows REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.page_versions_count_changes();

-- Name: page_version_rows page_versions_count_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER page_versions_count_truncate AFTER TRUNCATE ON public.page_version_rows FOR EACH STATEMENT EXECUTE FUNCTION public.page_versions_count_changes();

-- Name: page_versions page_versions_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER page_versions_insert INSTEAD OF INSERT ON public.page_versions FOR EACH ROW EXECUTE FUNCTION public.page_versions_insert();

-- Name: pages pages_count_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER pages_count_delete AFTER DELETE ON public.pages REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.pages_count_changes();

-- Name: pages pages_count_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER pages_count_insert AFTER INSERT ON public.pages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.pages_count_changes();

-- Name: pages pages_count_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER pages_count_truncate AFTER TRUNCATE ON public.pages FOR EACH STATEMENT EXECUTE FUNCTION public.pages_count_changes();

-- Name: pages pages_count_update; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER pages_count_update AFTER UPDATE ON public.pages REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.pages_count_changes();

-- Name: pages pages_current_version_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER pages_current_version_delete AFTER DELETE ON public.pages REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.pages_current_version();

-- Name: pages pages_current_version_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER pages_current_version_insert AFTER INSERT ON public.pages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.pages_current_version();

-- Name: pages pages_current_version_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER pages_current_version_truncate BEFORE TRUNCATE ON public.pages FOR EACH STATEMENT EXECUTE FUNCTION public.pages_current_version();

-- Name: pages pages_current_version_update; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER pages_current_version_update AFTER UPDATE ON public.pages REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.pages_current_version();

-- Name: passages passage_removals_recorded; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER passage_removals_recorded AFTER DELETE ON public.passages REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.passage_removals_record();

-- Name: passages passages_count_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER passages_count_delete AFTER DELETE ON public.passages REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.passages_count_changes();

-- Name: passages passages_count_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER passages_count_insert AFTER INSERT ON public.passages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.passages_count_changes();

-- Name: passages passages_count_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER passages_count_truncate AFTER TRUNCATE ON public.passages FOR EACH STATEMENT EXECUTE FUNCTION public.passages_count_changes();

-- Name: passages passages_search_fields; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER passages_search_fields BEFORE INSERT OR UPDATE OF text, lang ON public.passages FOR EACH ROW EXECUTE FUNCTION public.passages_search_fields();

-- Name: source_videos source_videos_source_stats_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER source_videos_source_stats_delete AFTER DELETE ON public.source_videos REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.source_videos_source_stats();

-- Name: source_videos source_videos_source_stats_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER source_videos_source_stats_insert AFTER INSERT ON public.source_videos REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.source_videos_source_stats();

-- Name: source_videos source_videos_source_stats_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER source_videos_source_stats_truncate AFTER TRUNCATE ON public.source_videos FOR EACH STATEMENT EXECUTE FUNCTION public.source_videos_source_stats();

-- Name: source_videos source_videos_source_stats_update; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER source_videos_source_stats_update AFTER UPDATE ON public.source_videos REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.source_videos_source_stats();

-- Name: sources sources_source_stats_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER sources_source_stats_insert AFTER INSERT ON public.sources REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.sources_source_stats();

-- Name: transcripts transcript_windows_deleted; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcript_windows_deleted AFTER DELETE ON public.transcripts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.transcript_windows_sync();

-- Name: transcripts transcript_windows_inserted; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcript_windows_inserted AFTER INSERT ON public.transcripts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.transcript_windows_sync();

-- Name: transcripts transcript_windows_truncated; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcript_windows_truncated AFTER TRUNCATE ON public.transcripts FOR EACH STATEMENT EXECUTE FUNCTION public.transcript_windows_truncate();

-- Name: transcripts transcript_windows_updated; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcript_windows_updated AFTER UPDATE ON public.transcripts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.transcript_windows_sync();

-- Name: transcripts transcripts_added; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcripts_added AFTER INSERT ON public.transcripts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.transcripts_added();

-- Name: transcripts transcripts_changed; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcripts_changed AFTER UPDATE ON public.transcripts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.transcripts_changed();

-- Name: transcripts transcripts_removed; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcripts_removed AFTER DELETE ON public.transcripts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.transcripts_removed();

-- Name: transcripts transcripts_source_stats_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcripts_source_stats_delete AFTER DELETE ON public.transcripts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.transcripts_source_stats();

-- Name: transcripts transcripts_source_stats_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcripts_source_stats_insert AFTER INSERT ON public.transcripts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.transcripts_source_stats();

-- Name: transcripts transcripts_source_stats_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcripts_source_stats_truncate AFTER TRUNCATE ON public.transcripts FOR EACH STATEMENT EXECUTE FUNCTION public.transcripts_source_stats();

-- Name: transcripts transcripts_truncated; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER transcripts_truncated BEFORE TRUNCATE ON public.transcripts FOR EACH STATEMENT EXECUTE FUNCTION public.transcripts_truncated();

-- Name: video_sync video_sync_outcome_counts_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER video_sync_outcome_counts_delete AFTER DELETE ON public.video_sync REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.video_outcome_counts_changes();

-- Name: video_sync video_sync_outcome_counts_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER video_sync_outcome_counts_insert AFTER INSERT ON public.video_sync REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.video_outcome_counts_changes();

-- Name: video_sync video_sync_outcome_counts_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER video_sync_outcome_counts_truncate AFTER TRUNCATE ON public.video_sync FOR EACH STATEMENT EXECUTE FUNCTION public.video_outcome_counts_changes();

-- Name: video_sync video_sync_outcome_counts_update; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER video_sync_outcome_counts_update AFTER UPDATE ON public.video_sync REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.video_outcome_counts_changes();

-- Name: videos videos_added; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER videos_added AFTER INSERT ON public.videos REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.videos_added();

-- Name: videos videos_changed; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER videos_changed AFTER UPDATE ON public.videos REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.videos_changed();

-- Name: videos videos_source_stats_delete; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER videos_source_stats_delete AFTER DELETE ON public.videos REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.videos_source_stats();

-- Name: videos videos_source_stats_insert; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER videos_source_stats_insert AFTER INSERT ON public.videos REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.videos_source_stats();

-- Name: videos videos_source_stats_truncate; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER videos_source_stats_truncate AFTER TRUNCATE ON public.videos FOR EACH STATEMENT EXECUTE FUNCTION public.videos_source_stats();

-- Name: webhook_endpoints webhook_endpoints_legacy_secret; Type: TRIGGER; Schema: public; Owner: -

CREATE TRIGGER webhook_endpoints_legacy_secret AFTER INSERT ON public.webhook_endpoints FOR EACH ROW WHEN ((new.secret IS NOT NULL)) EXECUTE FUNCTION public.webhook_endpoints_legacy_secret();

-- Name: batch_item_counts batch_item_counts_job_id_batches_job_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.batch_item_counts
    ADD CONSTRAINT batch_item_counts_job_id_batches_job_id_fk FOREIGN KEY (job_id) REFERENCES public.batches(job_id) ON DELETE CASCADE;

-- Name: batch_items batch_items_job_id_batches_job_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.batch_items
    ADD CONSTRAINT batch_items_job_id_batches_job_id_fk FOREIGN KEY (job_id) REFERENCES public.batches(job_id) ON DELETE CASCADE;

-- Name: batch_submissions batch_submissions_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.batch_submissions
    ADD CONSTRAINT batch_submissions_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE SET NULL;

-- Name: batches batches_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.batches
    ADD CONSTRAINT batches_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE SET NULL;

-- Name: credit_charges credit_charges_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.credit_charges
    ADD CONSTRAINT credit_charges_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE SET NULL;

-- Name: credit_charges credit_charges_sync_run_id_sync_runs_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.credit_charges
    ADD CONSTRAINT credit_charges_sync_run_id_sync_runs_id_fk FOREIGN KEY (sync_run_id) REFERENCES public.sync_runs(id) ON DELETE SET NULL;

-- Name: credit_reservations credit_reservations_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.credit_reservations
    ADD CONSTRAINT credit_reservations_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE SET NULL;

-- Name: credit_snapshots credit_snapshots_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.credit_snapshots
    ADD CONSTRAINT credit_snapshots_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE SET NULL;

-- Name: source_media source_media_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_media
    ADD CONSTRAINT source_media_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

-- Name: source_pages source_pages_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_pages
    ADD CONSTRAINT source_pages_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

-- Name: source_stats source_stats_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_stats
    ADD CONSTRAINT source_stats_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

-- Name: source_sync_leases source_sync_leases_source_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_sync_leases
    ADD CONSTRAINT source_sync_leases_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

-- Name: source_videos source_videos_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.source_videos
    ADD CONSTRAINT source_videos_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

-- Name: sync_runs sync_runs_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.sync_runs
    ADD CONSTRAINT sync_runs_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE SET NULL;

-- Name: translations translations_source_id_sources_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.translations
    ADD CONSTRAINT translations_source_id_sources_id_fk FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE SET NULL;

-- Name: webhook_deliveries webhook_deliveries_endpoint_id_webhook_endpoints_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_endpoint_id_webhook_endpoints_id_fk FOREIGN KEY (endpoint_id) REFERENCES public.webhook_endpoints(id) ON DELETE CASCADE;

-- Name: webhook_secrets webhook_secrets_endpoint_id_webhook_endpoints_id_fk; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.webhook_secrets
    ADD CONSTRAINT webhook_secrets_endpoint_id_webhook_endpoints_id_fk FOREIGN KEY (endpoint_id) REFERENCES public.webhook_endpoints(id) ON DELETE CASCADE;
