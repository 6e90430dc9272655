-- vsi: backward-compatible
-- Custom SQL: the source sync lock as a lease in a row (issue #16). It was a session-level
-- advisory lock on a reserved connection, which a transaction-pooling PgBouncer takes on one
-- server connection and releases (or not) on another. A row holds across any pooler: the holder
-- renews `expires_at` while its sync runs, deletes it at the end, and a crashed holder's lease
-- simply expires (src/db/locks.ts).
CREATE TABLE IF NOT EXISTS "source_sync_leases" (
	"source_id" bigint PRIMARY KEY REFERENCES "sources"("id") ON DELETE CASCADE,
	"holder" text NOT NULL,
	"acquired_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL
);
