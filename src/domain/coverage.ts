/**
 * Language coverage: what the videos asked for in one language got. The interface answers a
 * transcript asked in a language the video has none in with its first available language, and
 * charges it the same, so "done" says nothing of the language; this is what does.
 */
import { DELIVERED_ITEM_STATES } from './items.ts';

/**
 * What the videos asked in one language got, by their latest transcript outcome: delivered in it,
 * delivered in another (the interface falls back to the first available language), or none.
 */
export interface LanguageCoverage {
  /** the language asked for */
  lang: string;
  /** stored (or landed) in the language asked for */
  asked: number;
  /** stored in another language, per language */
  fellBack: Record<string, number>;
  /** the latest outcome is a failure: no transcript (e.g. `transcript-unavailable`, not-found) */
  none: number;
  /** not bought yet, in flight, retryable or quarantined */
  pending: number;
}

/** No video counted yet. */
export function emptyCoverage(lang: string): LanguageCoverage {
  return { lang, asked: 0, fellBack: {}, none: 0, pending: 0 };
}

/** Count `n` videos whose latest transcript outcome is `state`, delivered in `deliveredLang` ('' for none). */
export function addToCoverage(c: LanguageCoverage, state: string | null, deliveredLang: string, n: number): void {
  if (state !== null && (DELIVERED_ITEM_STATES as readonly string[]).includes(state) && deliveredLang !== '') {
    if (deliveredLang === c.lang) c.asked += n;
    else c.fellBack[deliveredLang] = (c.fellBack[deliveredLang] ?? 0) + n;
  } else if (state === 'failed') c.none += n;
  else c.pending += n;
}

/** Human text for a coverage: `de: 12 in de, 3 fell back (en 2, fr 1), 1 none, 4 pending`. */
export function describeCoverage(c: LanguageCoverage): string {
  const fell = Object.entries(c.fellBack).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const fellTotal = fell.reduce((t, [, n]) => t + n, 0);
  const parts = [`${c.asked} in ${c.lang}`];
  if (fellTotal > 0) parts.push(`${fellTotal} fell back (${fell.map(([l, n]) => `${l} ${n}`).join(', ')})`);
  parts.push(`${c.none} none`);
  if (c.pending > 0) parts.push(`${c.pending} pending`);
  return `${c.lang}: ${parts.join(', ')}`;
}
