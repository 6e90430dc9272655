CREATE TABLE "events" (
	"id" bigint PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL,
	"data" jsonb NOT NULL,
	"source_id" integer,
	"video_id" text,
	CONSTRAINT "events_type_ck" CHECK ("events"."type" in ('video.added', 'video.changed', 'video.gone', 'video.returned', 'transcript.added', 'transcript.changed', 'batch.completed', 'batch.expired', 'source.synced', 'source.failed', 'account.hold', 'account.hold_lifted'))
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_deliveries_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"endpoint_id" integer NOT NULL,
	"event_id" bigint NOT NULL,
	"event_type" text NOT NULL,
	"attempt" integer NOT NULL,
	"status" text NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"duration_ms" integer NOT NULL,
	"response_code" integer,
	"response_body" text,
	"error" text,
	CONSTRAINT "webhook_deliveries_status_ck" CHECK ("webhook_deliveries"."status" in ('delivered', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_endpoints_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"url" text NOT NULL,
	"event_types" text[],
	"secret" text NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"cursor" bigint DEFAULT 0 NOT NULL,
	"failing_since" timestamp with time zone,
	"failures" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"disabled_at" timestamp with time zone,
	"disabled_reason" text,
	"last_delivered_at" timestamp with time zone,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	CONSTRAINT "webhook_endpoints_url_ck" CHECK ("webhook_endpoints"."url" ~ '^https?://')
);
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "events_type_id_idx" ON "events" USING btree ("type","id");--> statement-breakpoint
CREATE INDEX "events_source_id_idx" ON "events" USING btree ("source_id","id") WHERE "events"."source_id" is not null;--> statement-breakpoint
CREATE INDEX "events_video_id_idx" ON "events" USING btree ("video_id","id") WHERE "events"."video_id" is not null;--> statement-breakpoint
CREATE INDEX "events_occurred_at_idx" ON "events" USING btree ("occurred_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries" USING btree ("endpoint_id","id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_started_idx" ON "webhook_deliveries" USING btree ("started_at");--> statement-breakpoint
-- Custom SQL: event ids in commit order, and a notification at commit (issue #14)
-- Each inserted event takes a transaction-scoped lock ('EV', 0), held until commit, before it
-- gets its id: transactions that write events commit one after the other from their first event
-- on, so ids become visible in increasing order and a reader's "after id N" never misses one.
-- A transaction lock, not a session one: it works through a transaction-pooling PgBouncer.
-- Producers write their events last in their transaction, so the lock is held for the commit only.
CREATE SEQUENCE "events_id_seq" AS bigint OWNED BY "events"."id";
--> statement-breakpoint
CREATE FUNCTION events_assign_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(17750, 0);
  NEW.id := nextval('events_id_seq');
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "events_assign_id" BEFORE INSERT ON "events" FOR EACH ROW EXECUTE FUNCTION events_assign_id();
--> statement-breakpoint
-- Postgres delivers a notification only when its transaction commits (and drops it on rollback):
-- listeners on videosite_ingest_events hear the highest new id once the events are readable.
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
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
--> statement-breakpoint
CREATE TRIGGER "events_notify" AFTER INSERT ON "events" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
