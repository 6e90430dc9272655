-- vsi: backward-compatible
-- Custom SQL (issue #16, rolling upgrades): which applied migrations a daemon of an older build
-- may keep running on. `migrate` upserts one row per migration of its journal after applying
-- them (src/db/migrate.ts): `created_at` is the journal's `when`, which drizzle records as
-- drizzle.__drizzle_migrations.created_at, and `backward_compatible` is true when the file
-- carries the line `-- vsi: backward-compatible` (src/domain/schema-compat.ts). A daemon that
-- finds an applied migration newer than its own newest reads its row here; one without a row,
-- or marked false, stops that daemon scheduling new syncs.
CREATE TABLE IF NOT EXISTS "schema_compat" (
	"tag" text PRIMARY KEY,
	"created_at" bigint NOT NULL,
	"backward_compatible" boolean NOT NULL,
	"applied_at" timestamp with time zone NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "schema_compat_created_at_idx" ON "schema_compat" ("created_at");
