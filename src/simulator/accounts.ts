/**
 * API keys and their accounts: plan, credits, and a per-key rate limit (token bucket on the
 * simulator clock, so a test can wait out a `Retry-After` by advancing the clock).
 */
import { z } from 'zod';
import type { Account } from '../api/schemas.ts';
import type { Clock } from './clock.ts';
import { hash32 } from './prng.ts';

/** The plan that gets `upgrade-required` on batch endpoints. */
export const FREE_PLAN = 'free';
export const DEFAULT_PLAN = 'pro';
export const DEFAULT_MAX_CREDITS = 1_000_000;

export const RateLimitSchema = z.object({
  /** sustained requests per second (simulated time) */
  requestsPerSecond: z.number().positive(),
  /** requests allowed at once after an idle period */
  burst: z.number().int().min(1),
});
export type RateLimit = z.infer<typeof RateLimitSchema>;

export const AccountSettingsSchema = z.object({
  organizationId: z.string().min(1),
  plan: z.string().min(1),
  maxCredits: z.number().int().min(0),
  usedCredits: z.number().int().min(0),
  /** overrides the simulator-wide rate limit for this key */
  rateLimit: RateLimitSchema.optional(),
});
export type AccountSettings = z.infer<typeof AccountSettingsSchema>;
export const AccountPatchSchema = AccountSettingsSchema.partial().strict();
export type AccountPatch = z.infer<typeof AccountPatchSchema>;

interface Bucket {
  tokens: number;
  atMs: number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterS: number };

export class Accounts {
  private readonly accounts = new Map<string, AccountSettings>();
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly clock: Clock,
    private defaultRateLimit: RateLimit,
  ) {}

  /** Create or update the account of `key`; missing fields of a new account take the defaults. */
  set(key: string, patch: AccountPatch): AccountSettings {
    const prev = this.accounts.get(key) ?? {
      organizationId: `org_${hash32(key).toString(36)}`,
      plan: DEFAULT_PLAN,
      maxCredits: DEFAULT_MAX_CREDITS,
      usedCredits: 0,
    };
    const next = AccountSettingsSchema.parse({ ...prev, ...patch });
    this.accounts.set(key, next);
    if (patch.rateLimit !== undefined) this.buckets.delete(key);
    return { ...next };
  }

  get(key: string): AccountSettings | undefined {
    const a = this.accounts.get(key);
    return a === undefined ? undefined : { ...a };
  }

  has(key: string): boolean {
    return this.accounts.has(key);
  }

  /** The `/me` answer of a key. */
  me(key: string): Account | undefined {
    const a = this.accounts.get(key);
    return (
      a && { organizationId: a.organizationId, plan: a.plan, maxCredits: a.maxCredits, usedCredits: a.usedCredits }
    );
  }

  setDefaultRateLimit(limit: RateLimit): void {
    this.defaultRateLimit = limit;
    this.buckets.clear();
  }

  /** Take one request token of `key`, or say how many seconds until one is available. */
  takeToken(key: string): RateDecision {
    const limit = this.accounts.get(key)?.rateLimit ?? this.defaultRateLimit;
    const now = this.clock.now();
    const b = this.buckets.get(key) ?? { tokens: limit.burst, atMs: now };
    b.tokens = Math.min(limit.burst, b.tokens + (Math.max(0, now - b.atMs) * limit.requestsPerSecond) / 1000);
    b.atMs = now;
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true };
    }
    const waitMs = ((1 - b.tokens) / limit.requestsPerSecond) * 1000;
    return { ok: false, retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  /** Charge `cost` credits, or return false (charging nothing) when that would exceed the quota. */
  charge(key: string, cost: number): boolean {
    const a = this.accounts.get(key);
    if (!a) return false;
    if (a.usedCredits + cost > a.maxCredits) return false;
    a.usedCredits += cost;
    return true;
  }
}
