/**
 * Fault injection: random faults at configured rates, and scripted answers consumed one per
 * matching request (stripe-node's testUtils style: reset, then 500, then 200).
 *
 * Random faults come in two groups. Before handling (nothing happened upstream): `errorRate`
 * (500 with an Error body) and `badGatewayRate` (502 with an HTML body). After handling (the
 * request took effect and was charged, only the answer is damaged): `resetRate` (the connection
 * is destroyed without an answer), `truncateRate` (the body is cut short) and
 * `schemaViolationRate` (a 2xx body that breaks its schema). The second group is the nasty case a
 * client must survive: a batch POST that was created although the answer never arrived.
 */
import { z } from 'zod';
import { rngFor, type Rng } from './prng.ts';

const rate = z.number().min(0).max(1);

export const FaultsSchema = z.object({
  /** share of requests answered 500 `internal-error` before handling, 0..1; default 0 */
  errorRate: rate,
  /** share of requests answered 502 with a non-JSON (HTML) body before handling, 0..1; default 0 */
  badGatewayRate: rate,
  /** share of requests handled, then their connection destroyed without an answer, 0..1; default 0 */
  resetRate: rate,
  /** share of requests handled, then their body cut short and the connection closed, 0..1; default 0 */
  truncateRate: rate,
  /** share of 2xx answers whose body violates the answer schema, 0..1; default 0 */
  schemaViolationRate: rate,
  /** extra delay before every answer, real ms; default 0 */
  latencyMs: z.number().int().min(0).max(600_000),
  /** answers carry no `x-billable-requests` header (an upstream or proxy that drops it); default false */
  dropBillingHeader: z.boolean(),
});
export type Faults = z.infer<typeof FaultsSchema>;
export const FaultsPatchSchema = FaultsSchema.partial().strict();
export type FaultsPatch = z.infer<typeof FaultsPatchSchema>;

export const NO_FAULTS: Faults = {
  errorRate: 0,
  badGatewayRate: 0,
  resetRate: 0,
  truncateRate: 0,
  schemaViolationRate: 0,
  latencyMs: 0,
  dropBillingHeader: false,
};

export const ScriptStepSchema = z
  .object({
    /** `METHOD /path` relative to `/v1`; `*` matches one path segment, `**` anything; method `*` any */
    match: z.string().regex(/^(\*|[A-Z]+) \/\S*$/, 'expected "METHOD /path/with/*"'),
    /** answer with this status (and `body`, `headers`) instead of the real answer */
    status: z.number().int().min(100).max(599).optional(),
    /** the scripted body: a string is sent as is, anything else as JSON */
    body: z.unknown().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    /** destroy the connection without an answer */
    reset: z.boolean().optional(),
    /** never send headers (until the client gives up or the simulator closes) */
    hang: z.boolean().optional(),
    /** send the headers and part of the body, then stall */
    stallBody: z.boolean().optional(),
    /** send this share (0..1, exclusive) of the body's bytes, then close the connection (a download broken midway) */
    truncateAt: z.number().gt(0).lt(1).optional(),
    /** with `truncateAt`: hold the connection this long after the last byte sent, then close it (a transfer that stalls, then drops), real ms; default 0 */
    cutAfterMs: z.number().int().min(0).max(600_000).optional(),
    /** send `afterFraction` of the body's bytes at once, then one byte every `byteEveryMs` (a trickling body) */
    trickle: z
      .object({ afterFraction: z.number().min(0).max(1), byteEveryMs: z.number().int().min(1).max(600_000) })
      .strict()
      .optional(),
    /** wait this long first, real ms */
    delayMs: z.number().int().min(0).max(600_000).optional(),
    /** run the real handler first (the request takes effect and is charged), then apply the step */
    process: z.boolean().optional(),
  })
  .strict();
export type ScriptStep = z.infer<typeof ScriptStepSchema>;

export type PreFault = 'error' | 'bad-gateway' | undefined;
export type PostFault = 'reset' | 'truncate' | 'schema-violation' | undefined;

function compile(match: string): { method: string; re: RegExp } {
  const space = match.indexOf(' ');
  const method = match.slice(0, space);
  const path = match.slice(space + 1).replace(/^\/v1(?=\/)/, '');
  const re = new RegExp(
    `^${path
      .split(/(\*\*|\*)/)
      .map((part) => (part === '**' ? '.*' : part === '*' ? '[^/]+' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
      .join('')}/?$`,
  );
  return { method, re };
}

export class FaultInjector {
  private faults: Faults;
  private readonly rng: Rng;
  private readonly steps: Array<{ step: ScriptStep; method: string; re: RegExp }> = [];

  constructor(seed: number, initial: Faults) {
    this.faults = { ...initial };
    this.rng = rngFor(seed, 'faults');
  }

  current(): Faults {
    return { ...this.faults };
  }

  set(patch: FaultsPatch): Faults {
    this.faults = FaultsSchema.parse({ ...this.faults, ...patch });
    return this.current();
  }

  clear(): void {
    this.faults = { ...NO_FAULTS };
    this.steps.length = 0;
  }

  /** Queue scripted steps behind those already queued. */
  script(steps: ScriptStep[]): number {
    for (const s of steps) {
      const step = ScriptStepSchema.parse(s);
      this.steps.push({ step, ...compile(step.match) });
    }
    return this.steps.length;
  }

  clearScript(): void {
    this.steps.length = 0;
  }

  /** Remove and return the first queued step matching the request (`path` relative to /v1). */
  takeStep(method: string, path: string): ScriptStep | undefined {
    const i = this.steps.findIndex((s) => (s.method === '*' || s.method === method) && s.re.test(path));
    if (i < 0) return undefined;
    return this.steps.splice(i, 1)[0]!.step;
  }

  rollPre(): PreFault {
    if (this.faults.errorRate > 0 && this.rng.chance(this.faults.errorRate)) return 'error';
    if (this.faults.badGatewayRate > 0 && this.rng.chance(this.faults.badGatewayRate)) return 'bad-gateway';
    return undefined;
  }

  rollPost(): PostFault {
    if (this.faults.resetRate > 0 && this.rng.chance(this.faults.resetRate)) return 'reset';
    if (this.faults.truncateRate > 0 && this.rng.chance(this.faults.truncateRate)) return 'truncate';
    if (this.faults.schemaViolationRate > 0 && this.rng.chance(this.faults.schemaViolationRate))
      return 'schema-violation';
    return undefined;
  }

  /** A fraction in (0, 1) for where to cut a truncated body. */
  cutFraction(): number {
    return 0.1 + this.rng.next() * 0.8;
  }
}
