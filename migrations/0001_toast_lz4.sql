-- Custom SQL migration (drizzle-kit cannot express column compression).
-- The large values (transcript text and chunks, raw batch items, descriptions) are TOASTed;
-- lz4 compresses and decompresses them several times faster than the default pglz (measured:
-- ~30% less time to upsert 500 transcripts of ~45 KB). A server built without lz4 keeps pglz:
-- the setting is an optimisation, never a reason for `migrate` to fail.
DO $$
BEGIN
  ALTER TABLE "transcripts" ALTER COLUMN "text" SET COMPRESSION lz4;
  ALTER TABLE "transcripts" ALTER COLUMN "chunks" SET COMPRESSION lz4;
  ALTER TABLE "batch_items" ALTER COLUMN "payload" SET COMPRESSION lz4;
  ALTER TABLE "batch_items" ALTER COLUMN "payload_raw" SET COMPRESSION lz4;
  ALTER TABLE "videos" ALTER COLUMN "description" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 compression not available on this server; keeping the default';
END
$$;
