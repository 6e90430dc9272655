-- vsi: backward-compatible
-- What each paid request was billed (x-billable-requests), beside its estimate; a sync run's total.
CREATE TABLE "credit_charges" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "credit_charges_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"charged_at" timestamp with time zone DEFAULT now() NOT NULL,
	"source_id" integer,
	"sync_run_id" bigint,
	"endpoint" text NOT NULL,
	"status" integer,
	"credits" integer NOT NULL,
	"estimated" integer,
	"basis" text NOT NULL,
	"budget_delta" integer DEFAULT 0 NOT NULL,
	"key_fingerprint" text,
	CONSTRAINT "credit_charges_credits_ck" CHECK ("credit_charges"."credits" >= 0),
	CONSTRAINT "credit_charges_basis_ck" CHECK ("credit_charges"."basis" in ('header', 'price', 'unanswered'))
);
--> statement-breakpoint
ALTER TABLE "sync_runs" ADD COLUMN "credits_billed" integer;--> statement-breakpoint
ALTER TABLE "credit_charges" ADD CONSTRAINT "credit_charges_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_charges" ADD CONSTRAINT "credit_charges_sync_run_id_sync_runs_id_fk" FOREIGN KEY ("sync_run_id") REFERENCES "public"."sync_runs"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "credit_charges_charged_at_idx" ON "credit_charges" USING btree ("charged_at");--> statement-breakpoint
CREATE INDEX "credit_charges_source_idx" ON "credit_charges" USING btree ("source_id","charged_at");--> statement-breakpoint
CREATE INDEX "credit_charges_sync_run_idx" ON "credit_charges" USING btree ("sync_run_id") WHERE "credit_charges"."sync_run_id" is not null;