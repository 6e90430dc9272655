/**
 * A raw item as the upstream delivered it, validated against the interface and classified
 * (src/domain/items.ts `classifyItem`). Kept apart from src/domain/items.ts, whose states and
 * codes are read by what never validates an item (`status`), so those do not load the
 * interface's schemas.
 */
import { firstIssue } from '../api/issues.ts';
import { BatchItemSchema, type BatchItem } from '../api/schemas.ts';
import type { BatchKind } from './batches.ts';
import { classifyItem, type ItemOutcome } from './items.ts';

/** Validate a raw item and classify it; one that fails the schema is quarantined with the path. */
export function classifyRawItem(raw: unknown, kind: BatchKind): ItemOutcome & { item?: BatchItem } {
  const parsed = BatchItemSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      state: 'quarantined',
      errorCode: rawErrorCode(raw),
      reason: `item does not match the interface at ${firstIssue(parsed.error)}`,
      reasonCode: 'schema',
    };
  }
  return { ...classifyItem(parsed.data, kind), item: parsed.data };
}

/** The errorCode of an item that failed validation, when it is a string (kept for status). */
function rawErrorCode(raw: unknown): string | null {
  const code = (raw as { errorCode?: unknown } | null)?.errorCode;
  return typeof code === 'string' ? code : null;
}
