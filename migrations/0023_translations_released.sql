-- vsi: backward-compatible
-- A translation's state `released` (issue #30): one whose answer was lost, or whose process died
-- while sending, that a person released with `replay --lost --yes` for one new purchase; kept, as
-- it may have been billed. The check only widened: a build of 0022 keeps working on it.
ALTER TABLE "translations" DROP CONSTRAINT "translations_state_ck";--> statement-breakpoint
ALTER TABLE "translations" ADD CONSTRAINT "translations_state_ck" CHECK ("translations"."state" in ('sending', 'stored', 'failed', 'unknown', 'refused-budget', 'released'));