/**
 * What the simulator's catalog says a video's purchases must come to, computed from the catalog
 * alone (not from what the pipeline wrote), to compare with what `status`, `/metrics` and the
 * admin pages show: the interface answers `forbidden` for a private video and `not-found` for a
 * gone one (both kinds), `transcript-unavailable` for a transcript of a video without any, and a
 * transcript asked in a language the video lacks in its first available language.
 */
import type { LanguageCoverage } from '../../src/domain/coverage.ts';
import type { Simulator } from '../../src/simulator/server.ts';

function infoOf(sim: Simulator, id: string) {
  const info = sim.catalog.videoInfo(id);
  if (!info) throw new Error(`video ${id} is not in the simulator's catalog`);
  return info;
}

/** The error code the catalog gives a video's purchase of `kind`, or null when it is delivered. */
export function catalogErrorCode(sim: Simulator, id: string, kind: 'video' | 'transcript'): string | null {
  const info = infoOf(sim, id);
  if (info.fate === 'gone') return 'not-found';
  if (info.fate === 'private') return 'forbidden';
  if (kind === 'transcript' && info.transcriptLanguages.length === 0) return 'transcript-unavailable';
  return null;
}

/** The coverage of `lang` over these videos once every purchase ended (nothing pending). */
export function catalogCoverage(sim: Simulator, ids: readonly string[], lang: string): LanguageCoverage {
  const c: LanguageCoverage = { lang, asked: 0, fellBack: {}, none: 0, pending: 0 };
  for (const id of ids) {
    if (catalogErrorCode(sim, id, 'transcript') !== null) c.none++;
    else {
      const langs = infoOf(sim, id).transcriptLanguages;
      if (langs.includes(lang)) c.asked++;
      else c.fellBack[langs[0]!] = (c.fellBack[langs[0]!] ?? 0) + 1;
    }
  }
  return c;
}

/** A language some of these videos have a transcript in and others (with transcripts) lack. */
export function partlyCoveredLang(sim: Simulator, ids: readonly string[]): string {
  const withAny = ids.filter((id) => catalogErrorCode(sim, id, 'transcript') === null);
  const counts = new Map<string, number>();
  for (const id of withAny)
    for (const l of infoOf(sim, id).transcriptLanguages) counts.set(l, (counts.get(l) ?? 0) + 1);
  const lang = [...counts]
    .filter(([, n]) => n > 0 && n < withAny.length)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0];
  if (lang === undefined)
    throw new Error(`no language covers some but not all of ${withAny.length} videos: pick another catalog`);
  return lang;
}
