-- vsi: backward-compatible
-- One full-text index per kind searched (issue #34): transcript search gets its own partial GIN
-- index over the transcripts' passages, in place of the index over every passage, as page search
-- got its own in 0034. The shared index held each page passage's entries a second time (beside
-- passages_page_tsv_idx) and the media passages' entries, which no search reads (media search
-- reads media_segments); and a transcript search through it read the row of every matching page
-- passage only to drop it by its kind. Backward-compatible: an older build's transcript search
-- names its kind as a parameter, which a custom plan matches to this index; page search uses
-- passages_page_tsv_idx as before. Building it holds writes to `passages` (the search indexer's)
-- until it is built, as 0034 did.
DROP INDEX "passages_tsv_idx";--> statement-breakpoint
CREATE INDEX "passages_transcript_tsv_idx" ON "passages" USING gin ("tsv") WHERE "passages"."kind" = 'transcript';
