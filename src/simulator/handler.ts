/**
 * What every endpoint handler gets and returns, and the shared request checks (zod parsing that
 * answers 400 naming the failing field).
 */
import type { z } from 'zod';
import { formatIssuePath } from '../api/issues.ts';
import type { Accounts } from './accounts.ts';
import type { Catalog } from './catalog.ts';
import type { Clock } from './clock.ts';
import type { CrawlJobs } from './crawl-jobs.ts';
import type { ExtractJobs } from './extract-jobs.ts';
import type { ItemCache } from './item-cache.ts';
import type { BatchJobs } from './jobs.ts';
import type { JobSettings } from './options.ts';
import { errorReply, type Reply } from './respond.ts';
import type { TranscriptJobs } from './transcript-jobs.ts';
import type { SyntheticWeb } from './web.ts';

export interface ApiRequest {
  params: Record<string, string>;
  /**
   * query parameters: a key given once as its string, a repeated key as every value in order
   * (the request schemas say which parameters take a list; `features` does)
   */
  query: Record<string, string | string[]>;
  /** the raw body text, or undefined when there was none */
  body: string | undefined;
  /** the authenticated key */
  apiKey: string;
  /** `http://host:port` as the client addressed the simulator (for absolute `next` URLs) */
  origin: string;
  /**
   * Charge `cost` credits to the key; false (nothing charged) when that would exceed its quota.
   * Handlers call it at the moment the request is accepted, before any side effect.
   */
  charge(cost: number): boolean;
}

export type Handler = (req: ApiRequest) => Reply | Promise<Reply>;

export interface ApiDeps {
  seed: number;
  platform: string;
  catalog: Catalog;
  accounts: Accounts;
  batches: BatchJobs;
  transcriptJobs: TranscriptJobs;
  crawls: CrawlJobs;
  extracts: ExtractJobs;
  web: SyntheticWeb;
  clock: Clock;
  /** the job settings in effect now (they can change at runtime) */
  jobSettings(): JobSettings;
  /** longest accepted `videoIds` */
  maxVideoIds: number;
  /** finished batch items kept serialised between polls; undefined: generated on every read */
  itemCache?: ItemCache | undefined;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; reply: Reply };

/** Validate with a request schema; a failure is a 400 `invalid-request` naming the field. */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, what: string): Parsed<z.output<S>> {
  const r = schema.safeParse(input);
  if (r.success) return { ok: true, value: r.data };
  const first = r.error.issues[0];
  const path = first ? formatIssuePath(first.path) : '(root)';
  return {
    ok: false,
    reply: errorReply(
      'invalid-request',
      `Invalid ${what}: ${path}: ${first?.message ?? 'invalid'}`,
      r.error.issues.map((i) => `${formatIssuePath(i.path)}: ${i.message}`).join('; '),
    ),
  };
}

/** Parse a JSON body, then validate it. */
export function parseBody<S extends z.ZodType>(schema: S, body: string | undefined): Parsed<z.output<S>> {
  if (body === undefined || body.trim() === '') {
    return { ok: false, reply: errorReply('invalid-request', 'Invalid body: (root): a JSON body is required') };
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { ok: false, reply: errorReply('invalid-request', 'Invalid body: (root): not valid JSON') };
  }
  return parseWith(schema, value, 'body');
}

export function creditsExhausted(): Reply {
  return errorReply(
    'limit-exceeded',
    'Credit limit exceeded.',
    'The credits of the current billing period are used up; see /me.',
  );
}

export function notFound(what: string): Reply {
  return errorReply('not-found', `${what} not found.`, `${what} does not exist or is no longer available.`);
}
