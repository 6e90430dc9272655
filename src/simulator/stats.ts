/**
 * Request statistics: counts by endpoint template and status, and credits charged. Tests and the
 * benchmark read them to check what a client did (how many polls, retries, charges).
 */
import { z } from 'zod';

export const SimulatorStatsSchema = z.object({
  /** all requests under /v1 */
  total: z.number(),
  /**
   * by `METHOD /template` (e.g. `GET /videosite/batch/{jobId}`, or `GET (unmatched)`), then by
   * status: the HTTP status as text, or `reset` / `hang` when no status was sent
   */
  byEndpoint: z.record(z.string(), z.object({ total: z.number(), byStatus: z.record(z.string(), z.number()) })),
  /** credits charged to all keys */
  creditsCharged: z.number(),
  /**
   * POSTs that named each video, by what they asked for (`video`, `transcript` or
   * `transcript:<lang>`), then by video ID: every batch POST the client sent, whatever the
   * answer (refused and scripted ones too), counted once per POST. A playlist or channel body
   * counts the videos it expands to. Tests read it to prove a video was not bought twice.
   */
  postsByVideo: z.record(z.string(), z.record(z.string(), z.number())),
});
export type SimulatorStats = z.infer<typeof SimulatorStatsSchema>;

export class RequestStats {
  private s: SimulatorStats = RequestStats.empty();

  private static empty(): SimulatorStats {
    return { total: 0, byEndpoint: {}, creditsCharged: 0, postsByVideo: {} };
  }

  record(endpoint: string, status: number | 'reset' | 'hang'): void {
    this.s.total++;
    const e = (this.s.byEndpoint[endpoint] ??= { total: 0, byStatus: {} });
    e.total++;
    const k = String(status);
    e.byStatus[k] = (e.byStatus[k] ?? 0) + 1;
  }

  /** One batch POST naming `videoIds` (duplicates within it count once). */
  recordPost(kind: string, lang: string | undefined, videoIds: readonly string[]): void {
    const byVideo = (this.s.postsByVideo[lang === undefined ? kind : `${kind}:${lang}`] ??= {});
    for (const id of new Set(videoIds)) byVideo[id] = (byVideo[id] ?? 0) + 1;
  }

  addCredits(n: number): void {
    this.s.creditsCharged += n;
  }

  snapshot(): SimulatorStats {
    return structuredClone(this.s);
  }

  reset(): void {
    this.s = RequestStats.empty();
  }
}
