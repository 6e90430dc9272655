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
});
export type SimulatorStats = z.infer<typeof SimulatorStatsSchema>;

export class RequestStats {
  private s: SimulatorStats = { total: 0, byEndpoint: {}, creditsCharged: 0 };

  record(endpoint: string, status: number | 'reset' | 'hang'): void {
    this.s.total++;
    const e = (this.s.byEndpoint[endpoint] ??= { total: 0, byStatus: {} });
    e.total++;
    const k = String(status);
    e.byStatus[k] = (e.byStatus[k] ?? 0) + 1;
  }

  addCredits(n: number): void {
    this.s.creditsCharged += n;
  }

  snapshot(): SimulatorStats {
    return structuredClone(this.s);
  }

  reset(): void {
    this.s = { total: 0, byEndpoint: {}, creditsCharged: 0 };
  }
}
