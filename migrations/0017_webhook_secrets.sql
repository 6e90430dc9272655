-- vsi: backward-compatible
-- Webhooks safe by default (issue #27). Signing secrets move to webhook_secrets (several per
-- endpoint while a rotation's grace runs, sealed with WEBHOOK_SECRETS_KEY when one is set); each
-- existing secret is copied there as a `legacy` one (its UTF-8 bytes are the key; it also signs
-- the old Videosite-Signature header). `webhook_endpoints.secret` stays for builds from before,
-- which read it: a trigger copies what they add. Those builds cannot sign for an endpoint added
-- or rotated since (its `secret` is null): their attempts at it fail and back off, nothing is lost.
-- Credentials in a URL were never sent: they are removed, and refused from now on. Endpoints
-- whose URL names a private, loopback or link-local address literally were meant to reach one:
-- they keep `allow_private`; a host name is checked at delivery, when it is resolved.
CREATE TABLE "webhook_secrets" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_secrets_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"endpoint_id" integer NOT NULL,
	"format" text NOT NULL,
	"encryption" text NOT NULL,
	"key_id" text,
	"material" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	CONSTRAINT "webhook_secrets_format_ck" CHECK ("webhook_secrets"."format" in ('whsec', 'legacy')),
	CONSTRAINT "webhook_secrets_encryption_ck" CHECK ("webhook_secrets"."encryption" in ('none', 'aes-256-gcm')),
	CONSTRAINT "webhook_secrets_key_id_ck" CHECK (("webhook_secrets"."encryption" = 'none') = ("webhook_secrets"."key_id" is null))
);
--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ALTER COLUMN "secret" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "allow_private" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "last_turn_at" timestamp with time zone;--> statement-breakpoint
UPDATE "webhook_endpoints" SET "url" = regexp_replace("url", '^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#]*@', '\1')
WHERE "url" ~ '^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*@';--> statement-breakpoint
-- the private ranges of src/domain/private-addresses.ts as this migration was written
DO $$
DECLARE
	r record;
	h text;
BEGIN
	FOR r IN SELECT "id", "url" FROM "webhook_endpoints" LOOP
		h := lower(substring(r."url" from '^[a-zA-Z][a-zA-Z0-9+.-]*://(\[[^]]*\]|[^:/?#]*)'));
		BEGIN
			IF h = 'localhost' OR h LIKE '%.localhost' OR btrim(h, '[]')::inet <<= ANY (ARRAY[
				'0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16',
				'::/128', '::1/128', 'fc00::/7', 'fe80::/10'
			]::inet[]) THEN
				UPDATE "webhook_endpoints" SET "allow_private" = true WHERE "id" = r."id";
			END IF;
		EXCEPTION WHEN invalid_text_representation THEN
			NULL; -- a host name, not an address
		END;
	END LOOP;
END $$;--> statement-breakpoint
ALTER TABLE "webhook_secrets" ADD CONSTRAINT "webhook_secrets_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_secrets_endpoint_idx" ON "webhook_secrets" USING btree ("endpoint_id","id");--> statement-breakpoint
INSERT INTO "webhook_secrets" ("endpoint_id", "format", "encryption", "material", "created_at")
SELECT "id", 'legacy', 'none', convert_to("secret", 'UTF8'), "created_at" FROM "webhook_endpoints" WHERE "secret" IS NOT NULL;--> statement-breakpoint
CREATE FUNCTION "webhook_endpoints_legacy_secret"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "webhook_secrets" ("endpoint_id", "format", "encryption", "material", "created_at")
	VALUES (NEW."id", 'legacy', 'none', convert_to(NEW."secret", 'UTF8'), NEW."created_at");
	RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "webhook_endpoints_legacy_secret" AFTER INSERT ON "webhook_endpoints"
FOR EACH ROW WHEN (NEW."secret" IS NOT NULL) EXECUTE FUNCTION "webhook_endpoints_legacy_secret"();--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_url_credentials_ck" CHECK ("webhook_endpoints"."url" !~ '^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*@');