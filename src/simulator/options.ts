/**
 * Settings of the simulator, each with its default and unit. `startSimulator(opts)` takes any
 * subset (every group may be partial); `resolveOptions` validates it with zod and fills in the
 * defaults, so a bad value fails at start naming the setting.
 */
import { z } from 'zod';
import { DEFAULT_PLATFORM, SIMULATOR_DEV_API_KEY } from '../config.ts';
import { LIMIT_MAX } from '../api/schemas.ts';
import { AccountPatchSchema, RateLimitSchema, type RateLimit } from './accounts.ts';
import { CRAWL_FAULTS, CRAWL_NEXT_SHAPES } from './crawl-jobs.ts';
import { FaultsPatchSchema, NO_FAULTS, type Faults } from './faults.ts';

export const DEFAULT_SIMULATOR_PORT = 8787;
export const DEFAULT_SIMULATOR_HOST = '127.0.0.1';
export const DEFAULT_SEED = 1;
export const DEFAULT_MAX_VIDEO_IDS = 5000;
/** Largest request body accepted: a 5000-URL batch fits many times over. */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;
/** Generous enough that nothing but a test that asks for it ever meets the rate limit. */
export const DEFAULT_RATE_LIMIT: RateLimit = { requestsPerSecond: 1000, burst: 2000 };

const share = z.number().min(0).max(1);
const count = (max: number) => z.number().int().min(0).max(max);
const range = (max: number) =>
  z
    .object({ min: count(max), max: count(max) })
    .strict()
    .refine((r) => r.min <= r.max, 'min must not exceed max');
const ms = z.number().int().min(0);

export const CatalogSettingsSchema = z
  .object({
    /** number of channels; default 3 (at least `channelSizes.length`) */
    channels: count(1000),
    /** exact regular-video counts of the first channels, e.g. [300, 5000]; default none */
    channelSizes: z.array(count(100_000)).optional(),
    /** regular videos of the other channels; default {min: 20, max: 80} */
    videosPerChannel: range(100_000),
    /** shorts per channel; default 6 */
    shortsPerChannel: count(10_000),
    /** live streams per channel; default 2 */
    livesPerChannel: count(10_000),
    /** playlists per channel; default 2 */
    playlistsPerChannel: count(100),
    /** entries per playlist (mostly regular videos, some shorts and lives); default {min: 5, max: 30} */
    playlistSize: range(LIMIT_MAX),
    /** chunks per transcript; default {min: 3, max: 12}; {min: 140, max: 160} gives ~20 KB transcripts */
    transcriptChunks: range(10_000),
    /** share of private videos (`forbidden`), 0..1; default 0.03 */
    privateShare: share,
    /** share of removed videos (`not-found`), 0..1; default 0.03 */
    goneShare: share,
    /** share of videos without transcripts (`transcript-unavailable`), 0..1; default 0.12 */
    noTranscriptShare: share,
  })
  .strict();
export type CatalogSettings = z.infer<typeof CatalogSettingsSchema>;

export const CATALOG_DEFAULTS: CatalogSettings = {
  channels: 3,
  videosPerChannel: { min: 20, max: 80 },
  shortsPerChannel: 6,
  livesPerChannel: 2,
  playlistsPerChannel: 2,
  playlistSize: { min: 5, max: 30 },
  transcriptChunks: { min: 3, max: 12 },
  privateShare: 0.03,
  goneShare: 0.03,
  noTranscriptShare: 0.12,
};

export const JobSettingsSchema = z
  .object({
    /** time a new batch (or transcript job) stays `queued`, simulated ms; default 1000 */
    queuedMs: ms,
    /** batch items finished per simulated second while `active`; default 100 */
    itemsPerSecond: z.number().positive(),
    /** a batch still unfinished this long after creation is `job-expired`, simulated ms; default 3_600_000 (1 h) */
    lifetimeMs: ms,
    /** results are kept this long after a batch ends, then `result-unavailable`, simulated ms; default 86_400_000 (24 h) */
    retentionMs: ms,
    /** a batch or crawl job is forgotten (404) this long after it ends, simulated ms; default 604_800_000 (7 days) */
    purgeMs: ms,
    /** share of batches that fail partway (status `failed`, unfinished items `internal-error`), 0..1; default 0 */
    failRate: share,
    /** share of batch items that end in `internal-error`, 0..1; default 0 */
    itemErrorRate: share,
    /** time a transcript job of `GET /transcript` stays `active`, simulated ms; default 3000 */
    transcriptJobMs: ms,
    /**
     * a transcript job's result is kept this long after the job ends, then it answers 404
     * (UPSTREAM.md: 1 hour), simulated ms; default 3_600_000
     */
    transcriptResultMs: ms,
    /**
     * how long a translation (`GET /{platform}/transcript/translate`) takes: the request waits this
     * long before it is answered and charged, real ms (a person's sleep, not the simulated clock's);
     * default 0
     */
    translateMs: ms,
    /** crawl time per page, simulated ms; default 100 */
    crawlPageMs: ms,
    /** time an extract job of `POST /extract` stays `active`, simulated ms; default 5000 */
    extractJobMs: ms,
    /** how a crawl answer's `next` names the next page (crawl-jobs.ts CRAWL_NEXT_SHAPES), for answers from now on; default `absolute` */
    crawlNext: z.enum(CRAWL_NEXT_SHAPES),
    /** a fault of crawls started from now on (crawl-jobs.ts CRAWL_FAULTS); default `none` */
    crawlFault: z.enum(CRAWL_FAULTS),
  })
  .strict();
export type JobSettings = z.infer<typeof JobSettingsSchema>;
export const JobSettingsPatchSchema = JobSettingsSchema.partial().strict();
export type JobSettingsPatch = z.infer<typeof JobSettingsPatchSchema>;

export const JOB_DEFAULTS: JobSettings = {
  queuedMs: 1000,
  itemsPerSecond: 100,
  lifetimeMs: 3_600_000,
  retentionMs: 86_400_000,
  purgeMs: 604_800_000,
  failRate: 0,
  itemErrorRate: 0,
  transcriptJobMs: 3000,
  transcriptResultMs: 3_600_000,
  translateMs: 0,
  crawlPageMs: 100,
  extractJobMs: 5000,
  crawlNext: 'absolute',
  crawlFault: 'none',
};

export const SimulatorOptionsSchema = z
  .object({
    /** seed of the catalog and of every random choice; default 1 */
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 32 - 1)
      .optional(),
    /** the platform path segment; default 'videosite' */
    platform: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]*$/, 'expected lowercase letters, digits and dashes')
      .optional(),
    /** interface to listen on; default 127.0.0.1 */
    host: z.string().min(1).optional(),
    /** port; default 0 (a random free port; the CLI's default is 8787) */
    port: z.number().int().min(0).max(65_535).optional(),
    /** the development key's value; default SIMULATOR_DEV_API_KEY (plan 'pro', 1_000_000 credits) */
    apiKey: z.string().min(1).optional(),
    /** overrides of the development key's account (plan, credits, rate limit); default none */
    devAccount: AccountPatchSchema.optional(),
    /** more accounts by key, e.g. {'test-free': {plan: 'free'}}; unset fields: plan 'pro', 1_000_000 credits, 0 used */
    accounts: z.record(z.string().min(1), AccountPatchSchema).optional(),
    /** catalog sizing and shares (any subset) */
    catalog: CatalogSettingsSchema.partial().strict().optional(),
    /** job timings (any subset) */
    jobs: JobSettingsPatchSchema.optional(),
    /** per-key rate limit of keys without their own; default 1000 requests per simulated second, burst 2000 */
    rateLimit: RateLimitSchema.optional(),
    /** delay before every answer, real ms; default 0 */
    latencyMs: z.number().int().min(0).max(600_000).optional(),
    /** faults in effect from the start; default none */
    faults: FaultsPatchSchema.optional(),
    /** simulated ms per real ms; default 1 */
    clockSpeed: z.number().min(0).optional(),
    /** the simulated time at start, epoch ms; default the real time */
    clockStartMs: z.number().int().min(0).optional(),
    /** longest accepted `videoIds` of a batch (longer: 400); default 5000 */
    maxVideoIds: z.number().int().min(1).max(1_000_000).optional(),
    /** largest accepted request body, bytes; default 10 MiB */
    maxBodyBytes: z.number().int().min(1024).optional(),
    /**
     * bytes of finished batch items kept serialised, so a repeated poll re-sends them instead of
     * generating them again (the benchmark: the simulator must not be what limits a poll);
     * default 0 (off)
     */
    itemCacheBytes: z.number().int().min(0).optional(),
  })
  .strict();
export type SimulatorSettingsInput = z.input<typeof SimulatorOptionsSchema>;

export interface SimulatorSettings {
  seed: number;
  platform: string;
  host: string;
  port: number;
  apiKey: string;
  devAccount: z.infer<typeof AccountPatchSchema>;
  accounts: Record<string, z.infer<typeof AccountPatchSchema>>;
  catalog: CatalogSettings;
  jobs: JobSettings;
  rateLimit: RateLimit;
  latencyMs: number;
  faults: Faults;
  clockSpeed: number;
  clockStartMs: number | undefined;
  maxVideoIds: number;
  maxBodyBytes: number;
  itemCacheBytes: number;
}

/** Defaults under a patch, ignoring keys whose value is undefined. */
export function withDefaults<T extends object>(defaults: T, patch: Partial<T> | undefined): T {
  const out = { ...defaults };
  for (const [k, v] of Object.entries(patch ?? {})) {
    if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

/** Validate options (throws a ZodError naming the setting) and fill in the defaults. */
export function resolveOptions(input: SimulatorSettingsInput = {}): SimulatorSettings {
  const o = SimulatorOptionsSchema.parse(input);
  return {
    seed: o.seed ?? DEFAULT_SEED,
    platform: o.platform ?? DEFAULT_PLATFORM,
    host: o.host ?? DEFAULT_SIMULATOR_HOST,
    port: o.port ?? 0,
    apiKey: o.apiKey ?? SIMULATOR_DEV_API_KEY,
    devAccount: o.devAccount ?? {},
    accounts: o.accounts ?? {},
    catalog: withDefaults(CATALOG_DEFAULTS, o.catalog),
    jobs: withDefaults(JOB_DEFAULTS, o.jobs),
    rateLimit: o.rateLimit ?? { ...DEFAULT_RATE_LIMIT },
    latencyMs: o.latencyMs ?? 0,
    faults: withDefaults(NO_FAULTS, o.faults),
    clockSpeed: o.clockSpeed ?? 1,
    clockStartMs: o.clockStartMs,
    maxVideoIds: o.maxVideoIds ?? DEFAULT_MAX_VIDEO_IDS,
    maxBodyBytes: o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    itemCacheBytes: o.itemCacheBytes ?? 0,
  };
}
