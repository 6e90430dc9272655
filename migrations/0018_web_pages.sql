-- vsi: backward-compatible
-- Web pages in the corpus (issue #29): pages, their versions, which source found which page, and
-- their search sections; crawls and scrapes recorded as batches (kind page, mode crawl or scrape).
-- Additive, and the checks only widened: a build of 0017 keeps working on it.
CREATE TABLE "page_sections" (
	"url" text NOT NULL,
	"n" integer NOT NULL,
	"headings" text[] NOT NULL,
	"anchor" text,
	"text" text NOT NULL,
	"tsv" "tsvector" NOT NULL,
	CONSTRAINT "page_sections_url_n_pk" PRIMARY KEY("url","n")
);
--> statement-breakpoint
CREATE TABLE "page_versions" (
	"url" text NOT NULL,
	"content_sha256" text NOT NULL,
	"name" text,
	"description" text,
	"og_url" text,
	"content" text NOT NULL,
	"count_characters" bigint,
	"stored_at" timestamp with time zone DEFAULT now() NOT NULL,
	"job_id" text,
	CONSTRAINT "page_versions_url_content_sha256_pk" PRIMARY KEY("url","content_sha256")
);
--> statement-breakpoint
CREATE TABLE "pages" (
	"url" text PRIMARY KEY NOT NULL,
	"name" text,
	"description" text,
	"og_url" text,
	"content" text NOT NULL,
	"count_characters" bigint,
	"content_sha256" text NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"gone_at" timestamp with time zone,
	"job_id" text,
	"source_id" integer
);
--> statement-breakpoint
CREATE TABLE "source_pages" (
	"source_id" integer NOT NULL,
	"url" text NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"gone_at" timestamp with time zone,
	CONSTRAINT "source_pages_source_id_url_pk" PRIMARY KEY("source_id","url")
);
--> statement-breakpoint
ALTER TABLE "batch_submissions" DROP CONSTRAINT "batch_submissions_kind_ck";--> statement-breakpoint
ALTER TABLE "batches" DROP CONSTRAINT "batches_kind_ck";--> statement-breakpoint
ALTER TABLE "batches" DROP CONSTRAINT "batches_mode_ck";--> statement-breakpoint
ALTER TABLE "events" DROP CONSTRAINT "events_type_ck";--> statement-breakpoint
ALTER TABLE "sources" DROP CONSTRAINT "sources_kind_ck";--> statement-breakpoint
ALTER TABLE "video_sync" DROP CONSTRAINT "video_sync_kind_ck";--> statement-breakpoint
ALTER TABLE "source_pages" ADD CONSTRAINT "source_pages_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "page_sections_tsv_idx" ON "page_sections" USING gin ("tsv");--> statement-breakpoint
CREATE INDEX "pages_updated_at_idx" ON "pages" USING btree ("updated_at");--> statement-breakpoint
CREATE INDEX "source_pages_url_idx" ON "source_pages" USING btree ("url");--> statement-breakpoint
ALTER TABLE "batch_submissions" ADD CONSTRAINT "batch_submissions_kind_ck" CHECK ("batch_submissions"."kind" in ('video', 'transcript', 'page'));--> statement-breakpoint
ALTER TABLE "batches" ADD CONSTRAINT "batches_kind_ck" CHECK ("batches"."kind" in ('video', 'transcript', 'page'));--> statement-breakpoint
ALTER TABLE "batches" ADD CONSTRAINT "batches_mode_ck" CHECK ("batches"."mode" in ('batch', 'generate', 'crawl', 'scrape') and ("batches"."mode" = 'batch' or ("batches"."mode" = 'generate' and "batches"."kind" = 'transcript') or ("batches"."mode" in ('crawl', 'scrape') and "batches"."kind" = 'page')));--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_type_ck" CHECK ("events"."type" in ('video.added', 'video.changed', 'video.gone', 'video.returned', 'transcript.added', 'transcript.changed', 'page.added', 'page.changed', 'page.gone', 'page.returned', 'batch.completed', 'batch.expired', 'source.synced', 'source.failed', 'account.hold', 'account.hold_lifted'));--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_kind_ck" CHECK ("sources"."kind" in ('playlist', 'channel', 'videos', 'search', 'website', 'pages'));--> statement-breakpoint
ALTER TABLE "video_sync" ADD CONSTRAINT "video_sync_kind_ck" CHECK ("video_sync"."kind" in ('video', 'transcript', 'page'));