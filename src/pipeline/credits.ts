/**
 * The credit guard: credits are money, so every paid submission is checked against a fresh
 * `GET /me` (free, kept in `credit_snapshots`) minus CREDIT_RESERVE and what syncs running side
 * by side have already reserved.
 */
import type { Account } from '../api/schemas.ts';
import { insertCreditSnapshot } from '../db/credit-snapshots.ts';
import type { PipelineDeps } from './deps.ts';

/**
 * Credits that syncs running side by side (a backfill of many sources) have passed the credit
 * guard for. Each check reads `/me` and also subtracts every reservation that `/me` may not show
 * yet: those still submitting, and those released only after the check's read began. One
 * released before a read began is in that read. Checks need not wait for each other; at worst a
 * charge is counted twice, which errs on the side of refusing.
 */
export class CreditReservations {
  private seq = 0;
  private readonly reserved = new Set<{ credits: number; releasedAt?: number }>();
  /** start marks of the `/me` reads in progress */
  private readonly reading = new Set<number>();

  /** `left()`: credits left per a fresh `/me`. An estimate that fits is reserved until `release()`. */
  async check(estimate: number, left: () => Promise<number>): Promise<{ available: number; release: () => void }> {
    const readFrom = ++this.seq;
    this.reading.add(readFrom);
    let fromMe: number;
    try {
      fromMe = await left();
    } finally {
      this.reading.delete(readFrom);
    }
    let held = 0;
    for (const r of this.reserved) if (r.releasedAt === undefined || r.releasedAt > readFrom) held += r.credits;
    this.prune();
    const available = fromMe - held;
    if (estimate > available) return { available, release: () => {} };
    const mine: { credits: number; releasedAt?: number } = { credits: estimate };
    this.reserved.add(mine);
    return {
      available,
      release: () => {
        mine.releasedAt ??= ++this.seq;
        this.prune();
      },
    };
  }

  /** Forget released reservations that every read in progress began after. */
  private prune(): void {
    let oldest = Infinity;
    for (const r of this.reading) oldest = Math.min(oldest, r);
    for (const r of this.reserved) if (r.releasedAt !== undefined && r.releasedAt < oldest) this.reserved.delete(r);
  }
}

export class CreditsRefusedError extends Error {
  readonly needed: number;
  readonly available: number;
  constructor(needed: number, available: number, reserve: number) {
    super(
      `not enough credits: this submission needs ${needed}, ${available} are left` +
        (reserve > 0 ? ` above the reserve of ${reserve}` : ''),
    );
    this.name = 'CreditsRefusedError';
    this.needed = needed;
    this.available = available;
  }
}

/** Credits left for a submission (GET /me, minus the reserve and what side-by-side syncs reserved). */
export async function checkCredits(
  deps: Pick<PipelineDeps, 'sql' | 'api' | 'settings'>,
  sourceId: number | null,
  estimate: number,
  reservations: CreditReservations | undefined,
): Promise<{ available: number; release: () => void }> {
  const left = async () => {
    const account = await takeCreditSnapshot(deps, sourceId, 'before-submit');
    return account.maxCredits - account.usedCredits - deps.settings.creditReserve;
  };
  return reservations ? reservations.check(estimate, left) : { available: await left(), release: () => {} };
}

/** GET /me (free) and keep it in `credit_snapshots`. */
export async function takeCreditSnapshot(
  deps: Pick<PipelineDeps, 'sql' | 'api'>,
  sourceId: number | null,
  reason: string,
): Promise<Account> {
  const me = await deps.api.me();
  await insertCreditSnapshot(deps.sql, me, reason, sourceId);
  return me;
}
