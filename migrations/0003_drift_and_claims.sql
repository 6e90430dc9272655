CREATE TABLE "upstream_hold_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "upstream_hold_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"code" text NOT NULL,
	"event" text NOT NULL,
	"reason" text,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "batch_items" ADD COLUMN "reason_code" text;--> statement-breakpoint
ALTER TABLE "batches" ADD COLUMN "upstream_status" text;--> statement-breakpoint
ALTER TABLE "batches" ADD COLUMN "poll_failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "batches" ADD COLUMN "reason" text;--> statement-breakpoint
ALTER TABLE "batches" ADD COLUMN "not_found_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "video_sync" ADD COLUMN "submission_id" bigint;--> statement-breakpoint
ALTER TABLE "video_sync" ADD COLUMN "text_only" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX "upstream_hold_events_at_idx" ON "upstream_hold_events" USING btree ("at");--> statement-breakpoint
CREATE INDEX "batch_items_quarantined_idx" ON "batch_items" USING btree ("reason_code") WHERE "batch_items"."state" = 'quarantined';--> statement-breakpoint
UPDATE "batch_items" SET "reason_code" = CASE
  WHEN "reason" LIKE 'item does not match the interface%' THEN 'schema'
  WHEN "reason" LIKE '%repeated in the answer%' THEN 'duplicate'
  WHEN "reason" LIKE 'no % and no errorCode%' THEN 'no-result'
  ELSE 'unstorable' END
WHERE "state" = 'quarantined' AND "reason_code" IS NULL;
