ALTER TABLE "sync_runs" DROP CONSTRAINT "sync_runs_outcome_ck";--> statement-breakpoint
ALTER TABLE "upstream_holds" DROP CONSTRAINT "upstream_holds_pkey";--> statement-breakpoint
ALTER TABLE "upstream_hold_events" ADD COLUMN "key_fingerprint" text;--> statement-breakpoint
ALTER TABLE "upstream_holds" ADD COLUMN "key_fingerprint" text;--> statement-breakpoint
CREATE UNIQUE INDEX "upstream_holds_code_key_uq" ON "upstream_holds" USING btree ("code","key_fingerprint");--> statement-breakpoint
ALTER TABLE "sync_runs" ADD CONSTRAINT "sync_runs_outcome_ck" CHECK ("sync_runs"."outcome" is null or "sync_runs"."outcome" in ('submitted', 'up-to-date', 'refused-credits', 'refused-upstream', 'error', 'held'));