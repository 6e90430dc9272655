-- vsi: backward-compatible
-- Page search's own full-text index (issue #34): a GIN index over the pages' passages alone. Page
-- search read the index shared with transcripts, which returns every passage holding the words,
-- and read each transcript passage's row only to drop it by its kind: the more transcripts, the
-- slower a page search. Additive: an older build's queries read the shared index as before.
CREATE INDEX "passages_page_tsv_idx" ON "passages" USING gin ("tsv") WHERE "passages"."kind" = 'page';
