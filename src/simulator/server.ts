/**
 * The embedded upstream simulator: an HTTP server that answers every endpoint of the interface
 * (`shared/UPSTREAM.md`) from a synthetic catalog, with batch jobs that live on a controllable
 * clock, accounts with credits and rate limits, and fault injection.
 *
 *   const sim = await startSimulator({ seed: 7, catalog: { channelSizes: [300] } });
 *   fetch(`${sim.baseUrl}/me`, { headers: { 'x-api-key': sim.apiKey } });
 *   sim.clock.advance(3_600_000);   // reach job expiry without waiting
 *   await sim.close();
 *
 * Request path: scripted step (if one matches) -> latency -> random pre-handling fault ->
 * route -> API key (401) -> rate limit (429 + Retry-After) -> handler (400 / 402 / 404 / credits
 * 429 / answer) -> random post-handling fault -> write (batch answers streamed).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../log.ts';
import { silentLogger } from '../log.ts';
import { BATCH_LIMIT_DEFAULT, type Metadata, type Video } from '../api/schemas.ts';
import { BILLING_HEADER } from '../api/http.ts';
import { Accounts, type AccountPatch, type AccountSettings } from './accounts.ts';
import { buildAdminRouter } from './admin.ts';
import { registerBatchEndpoints } from './batch-endpoints.ts';
import { Catalog, type ChannelInfo, type VideoEdit, type VideoFate, type VideoKind } from './catalog.ts';
import { createClock, type Clock } from './clock.ts';
import { CrawlJobs } from './crawl-jobs.ts';
import { registerExtractEndpoints } from './extract-endpoints.ts';
import { ExtractJobs } from './extract-jobs.ts';
import { FaultInjector, type Faults, type FaultsPatch, type ScriptStep } from './faults.ts';
import { parseVideoRef } from './ids.ts';
import type { ApiDeps, Handler } from './handler.ts';
import { ItemCache } from './item-cache.ts';
import { BatchJobs } from './jobs.ts';
import { registerMediaEndpoints } from './media-endpoints.ts';
import {
  JobSettingsPatchSchema,
  resolveOptions,
  withDefaults,
  type JobSettings,
  type JobSettingsPatch,
  type SimulatorSettingsInput,
} from './options.ts';
import { errorReply, materialize, readBody, writeReply, type Damage, type Reply } from './respond.ts';
import { Router } from './router.ts';
import { RequestStats, type SimulatorStats } from './stats.ts';
import { TranscriptJobs } from './transcript-jobs.ts';
import { registerVideositeEndpoints } from './videosite-endpoints.ts';
import { SyntheticWeb } from './web.ts';
import { hasSpeech, socialMetadata, socialPlatformOf } from './social.ts';

export type SimulatorOptions = SimulatorSettingsInput & {
  /** where the simulator logs (requests at debug, errors at error); default silent */
  logger?: Logger;
};

/** What the catalog says about one video (for tests and tools choosing their inputs). */
export interface VideoInfo {
  id: string;
  channelId: string;
  kind: VideoKind;
  /** `private` answers forbidden, `gone` not-found */
  fate: VideoFate;
  transcriptLanguages: string[];
  /** seconds */
  durationS: number;
}

export interface SimulatorCatalog {
  channels(): ChannelInfo[];
  /** IDs of a channel's videos of one kind (default regular), newest first; undefined for an unknown channel */
  videoIds(channelId: string, kind?: VideoKind): string[] | undefined;
  /** IDs of a playlist's entries of one kind (default regular), in playlist order */
  playlistVideoIds(playlistId: string, kind?: VideoKind): string[] | undefined;
  videoInfo(videoId: string): VideoInfo | undefined;
  /** the Video resource as the API answers it (whatever the video's fate) */
  video(videoId: string): Video | undefined;
  /** append `count` new regular videos at the front of a channel's listing; their IDs, newest first */
  addVideos(channelId: string, count: number): string[] | undefined;
  /**
   * Change a video as a platform does (batches created from now on see it; an earlier batch may
   * answer either); the video as it is now, undefined for an unknown ID.
   */
  editVideo(videoId: string, patch: VideoEdit): VideoInfo | undefined;
}

export interface Simulator {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `url + '/v1'`: what `API_BASE_URL` should be */
  baseUrl: string;
  platform: string;
  /** the development key in effect */
  apiKey: string;
  seed: number;
  clock: Clock;
  catalog: SimulatorCatalog;
  /** the synthetic websites of the web endpoints (their pages, edits) */
  web: Pick<SyntheticWeb, 'siteUrls' | 'editSite' | 'livePages'>;
  /** the synthetic posts of the four social platforms, as `/metadata` and `/transcript` answer them (free to read here) */
  media: {
    /** the Metadata `/metadata` answers for a social post's URL; undefined for another URL */
    metadata(url: string): Metadata | undefined;
    /** whether a post's video has speech (without: its transcript is `content: []`) */
    hasSpeech(url: string): boolean;
  };
  faults(): Faults;
  setFaults(patch: FaultsPatch): Faults;
  /** no faults and no latency any more, and the script queue emptied */
  clearFaults(): void;
  /** queue scripted answers (consumed one per matching request); returns the queue length */
  script(steps: ScriptStep[]): number;
  clearScript(): void;
  stats(): SimulatorStats;
  resetStats(): void;
  /** create or patch the account of a key */
  setAccount(key: string, patch: AccountPatch): AccountSettings;
  getAccount(key: string): AccountSettings | undefined;
  /** job settings for jobs created from now on */
  jobSettings(): JobSettings;
  setJobSettings(patch: JobSettingsPatch): JobSettings;
  /** stop listening and destroy every open connection (also hung ones) */
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function queryOf(url: URL): Record<string, string> {
  const q: Record<string, string> = {};
  for (const [k, v] of url.searchParams) q[k] = v;
  return q;
}

/** An API request's query: a repeated key keeps every value (a list parameter such as `features`). */
function apiQueryOf(url: URL): Record<string, string | string[]> {
  const q: Record<string, string | string[]> = {};
  for (const k of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(k);
    q[k] = all.length === 1 ? all[0]! : all;
  }
  return q;
}

const BAD_GATEWAY_HTML =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n';

function scriptedReply(step: ScriptStep): Reply {
  const status = step.status ?? 200;
  const headers = step.headers ?? {};
  if (typeof step.body === 'string') {
    const looksJson = /^\s*[[{]/.test(step.body);
    // a step may name its own content type (a gateway's `text/html` page)
    const named = Object.entries(headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1];
    const contentType = named ?? (looksJson ? 'application/json' : 'text/plain; charset=utf-8');
    return { kind: 'raw', status, body: step.body, contentType, headers };
  }
  if (step.body === undefined) return { kind: 'raw', status, body: '', contentType: 'text/plain', headers };
  return { kind: 'json', status, body: step.body, headers };
}

function videoInfoOf(catalog: Catalog, videoId: string): VideoInfo | undefined {
  const ref = catalog.findVideo(videoId);
  if (!ref) return undefined;
  const f = catalog.facts(ref);
  return {
    id: f.id,
    channelId: f.channelId,
    kind: ref.kind,
    fate: f.fate,
    transcriptLanguages: [...f.transcriptLanguages],
    durationS: f.durationS,
  };
}

/** What a test sees of the catalog through `Simulator.catalog`. */
function catalogView(catalog: Catalog): Simulator['catalog'] {
  return {
    channels: () => catalog.channels(),
    videoIds: (channelId, kind = 'video') => {
      const c = catalog.findChannel(channelId);
      return c === undefined ? undefined : catalog.channelVideoIds(c, kind);
    },
    playlistVideoIds: (playlistId, kind = 'video') => {
      const p = catalog.findPlaylist(playlistId);
      return p === undefined ? undefined : catalog.playlistVideoIds(p, kind);
    },
    videoInfo: (videoId) => videoInfoOf(catalog, videoId),
    editVideo: (videoId, patch) => {
      const ref = catalog.findVideo(videoId);
      if (!ref) return undefined;
      catalog.editVideo(ref, patch);
      return videoInfoOf(catalog, videoId);
    },
    video: (videoId) => {
      const ref = catalog.findVideo(videoId);
      return ref ? catalog.video(ref) : undefined;
    },
    addVideos: (channelId, count) => {
      const c = catalog.findChannel(channelId);
      return c === undefined ? undefined : catalog.addVideos(c, count);
    },
  };
}

/** Count the videos a batch POST names (a playlist or channel body: the videos it expands to). */
function recordBatchPost(
  catalog: Catalog,
  stats: RequestStats,
  platform: string,
  endpoint: string,
  body: string,
): void {
  const kind =
    endpoint === `POST /${platform}/video/batch`
      ? 'video'
      : endpoint === `POST /${platform}/transcript/batch`
        ? 'transcript'
        : undefined;
  if (kind === undefined) return;
  let b: { videoIds?: unknown; playlistId?: unknown; channelId?: unknown; limit?: unknown; lang?: unknown };
  try {
    b = JSON.parse(body) as typeof b;
  } catch {
    return;
  }
  if (b === null || typeof b !== 'object') return;
  const limit = typeof b.limit === 'number' ? b.limit : BATCH_LIMIT_DEFAULT;
  let ids: string[] = [];
  if (Array.isArray(b.videoIds)) {
    ids = b.videoIds.filter((x): x is string => typeof x === 'string').map((x) => parseVideoRef(x) ?? x.trim());
  } else if (typeof b.playlistId === 'string') {
    const pl = catalog.findPlaylist(b.playlistId);
    ids = pl === undefined ? [] : catalog.playlistVideoIds(pl, 'video', limit);
  } else if (typeof b.channelId === 'string') {
    const c = catalog.findChannel(b.channelId);
    ids = c === undefined ? [] : catalog.channelVideoIds(c, 'video', limit);
  }
  stats.recordPost(kind, kind === 'transcript' && typeof b.lang === 'string' ? b.lang : undefined, ids);
}

/** Listen on `port` and `host`; the URL the server answers at (an IPv6 address in brackets). */
async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('simulator: unexpected server address');
  const shown = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return `http://${shown}:${addr.port}`;
}

/** What the API's request path reads: the simulator's state, and the URL it answers at once listening. */
interface ApiServer {
  settings: ReturnType<typeof resolveOptions>;
  catalog: Catalog;
  accounts: Accounts;
  stats: RequestStats;
  faults: FaultInjector;
  router: Router<Handler>;
  log: Logger;
  /** set once the server listens */
  url: string;
}

/** What the endpoint handlers share: the catalog, the accounts, the job stores and the synthetic web. */
function createApiDeps(
  settings: ReturnType<typeof resolveOptions>,
  state: { clock: Clock; catalog: Catalog; accounts: Accounts; stats: RequestStats },
  jobSettings: ApiDeps['jobSettings'],
): ApiDeps {
  const { clock, catalog, accounts, stats } = state;
  const web = new SyntheticWeb(settings.seed);
  return {
    seed: settings.seed,
    platform: settings.platform,
    catalog,
    accounts,
    batches: new BatchJobs(settings.seed, catalog),
    transcriptJobs: new TranscriptJobs(settings.seed, catalog),
    crawls: new CrawlJobs(web, (key, credits) => {
      if (accounts.charge(key, credits)) stats.addCredits(credits);
    }),
    extracts: new ExtractJobs(settings.seed),
    web,
    clock,
    jobSettings,
    maxVideoIds: settings.maxVideoIds,
    itemCache: settings.itemCacheBytes > 0 ? new ItemCache(settings.itemCacheBytes) : undefined,
  };
}

/** The simulator's control endpoints (`/__admin/...`). */
async function handleAdmin(
  api: ApiServer,
  adminRouter: ReturnType<typeof buildAdminRouter>,
  req: IncomingMessage,
  res: ServerResponse,
  u: URL,
): Promise<void> {
  const body = await readBody(req, api.settings.maxBodyBytes);
  const match = adminRouter.match(req.method ?? 'GET', u.pathname.slice('/__admin'.length));
  let reply: Reply;
  if (match === undefined || match === 'method') reply = errorReply('not-found', 'No such admin endpoint.');
  else {
    try {
      reply = match.handler({ params: match.params, query: queryOf(u), body });
    } catch (e: unknown) {
      // a setter refusing a value (e.g. a negative clock advance) is the caller's mistake
      reply = errorReply('invalid-request', e instanceof Error ? e.message : String(e));
    }
  }
  await writeReply(res, reply);
}

/** One request: to the control endpoints, the API, or a 404. */
function routeRequest(
  api: ApiServer,
  adminRouter: ReturnType<typeof buildAdminRouter>,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  let u: URL;
  try {
    u = new URL(req.url ?? '/', 'http://localhost');
  } catch {
    void writeReply(res, errorReply('invalid-request', 'Malformed request URL.'));
    return;
  }
  const p = u.pathname;
  const work =
    p === '/__admin' || p.startsWith('/__admin/')
      ? handleAdmin(api, adminRouter, req, res, u)
      : p.startsWith('/v1/')
        ? handleApi(api, req, res, u)
        : writeReply(res, errorReply('not-found', 'No such endpoint.', 'API paths start with /v1/'));
  work.catch((e: unknown) => {
    api.log.error({ event: 'simulator.request_failed', err: e }, 'simulator request failed');
    res.socket?.destroy();
  });
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const { logger, ...rest } = opts;
  const log = logger ?? silentLogger();
  const settings = resolveOptions(rest);
  const clock = createClock({ speed: settings.clockSpeed, startMs: settings.clockStartMs });
  const catalog = new Catalog({ ...settings.catalog, seed: settings.seed, platform: settings.platform });
  const accounts = new Accounts(clock, settings.rateLimit);
  accounts.set(settings.apiKey, { organizationId: 'org_dev', ...settings.devAccount });
  for (const [key, patch] of Object.entries(settings.accounts)) accounts.set(key, patch);
  const faults = new FaultInjector(settings.seed, settings.faults);
  const stats = new RequestStats();
  let jobs = settings.jobs;
  const deps = createApiDeps(settings, { clock, catalog, accounts, stats }, () => jobs);
  const router = new Router<Handler>();
  registerBatchEndpoints(router, deps);
  registerVideositeEndpoints(router, deps);
  registerMediaEndpoints(router, deps);
  registerExtractEndpoints(router, deps);

  const api: ApiServer = { settings, catalog, accounts, stats, faults, router, log, url: '' };
  const sockets = new Set<Socket>();

  const sim: Simulator = {
    url: '',
    baseUrl: '',
    platform: settings.platform,
    apiKey: settings.apiKey,
    seed: settings.seed,
    clock,
    catalog: catalogView(catalog),
    web: deps.web,
    media: {
      metadata: (url) => {
        const u = new URL(url);
        const platform = socialPlatformOf(u);
        if (!platform) return undefined;
        return socialMetadata(
          settings.seed,
          platform,
          u,
          deps.transcriptJobs.mediaDurationS(undefined, u.href, undefined),
        );
      },
      hasSpeech: (url) => hasSpeech(settings.seed, url),
    },
    faults: () => faults.current(),
    setFaults: (patch) => faults.set(patch),
    clearFaults: () => faults.clear(),
    script: (steps) => faults.script(steps),
    clearScript: () => faults.clearScript(),
    stats: () => stats.snapshot(),
    resetStats: () => stats.reset(),
    setAccount: (key, patch) => accounts.set(key, patch),
    getAccount: (key) => accounts.get(key),
    jobSettings: () => ({ ...jobs }),
    setJobSettings: (patch) => {
      jobs = withDefaults(jobs, JobSettingsPatchSchema.parse(patch));
      return { ...jobs };
    },
    close: () => Promise.resolve(),
  };
  const adminRouter = buildAdminRouter(sim);
  const server: Server = createServer((req, res) => routeRequest(api, adminRouter, req, res));
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  // a client that vanishes mid-request must not take the server down
  server.on('clientError', (_e, socket) => socket.destroy());

  const url = await listen(server, settings.port, settings.host);
  api.url = url;
  sim.url = url;
  sim.baseUrl = `${url}/v1`;
  let closing: Promise<void> | undefined;
  sim.close = () => {
    closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
    return closing;
  };
  log.info(
    { event: 'simulator.listening', url: sim.baseUrl, platform: settings.platform, seed: settings.seed },
    'simulator listening',
  );
  return sim;
}

/** Auth, rate limit, routing and the handler: the answer to a request that reached the API. */
async function answer(
  api: ApiServer,
  req: IncomingMessage,
  u: URL,
  rel: string,
  match: ReturnType<Router<Handler>['match']>,
  body: string | undefined,
  billed: (credits: number) => void,
): Promise<Reply> {
  if (match === undefined || match === 'method') {
    return errorReply('not-found', 'No such endpoint.', `${req.method} /v1${rel} is not an endpoint of this API`);
  }
  const header = req.headers['x-api-key'];
  const apiKey = Array.isArray(header) ? header[0] : header;
  if (apiKey === undefined || apiKey === '') {
    return errorReply('unauthorized', 'Missing API key.', 'Send the API key in the x-api-key header.');
  }
  // the key itself is never echoed: answers and logs may end up anywhere
  if (!api.accounts.has(apiKey))
    return errorReply('unauthorized', 'Invalid API key.', 'The API key is unknown or was revoked.');
  const rate = api.accounts.takeToken(apiKey);
  if (!rate.ok) {
    return errorReply(
      'limit-exceeded',
      'Rate limit exceeded.',
      `Too many requests; retry after ${rate.retryAfterS} s.`,
      {
        'retry-after': String(rate.retryAfterS),
      },
    );
  }
  if (body === undefined) {
    return errorReply(
      'invalid-request',
      'Invalid body: (root): too large',
      `the limit is ${api.settings.maxBodyBytes} bytes`,
    );
  }
  return match.handler({
    params: match.params,
    query: apiQueryOf(u),
    body: body === '' ? undefined : body,
    apiKey,
    origin: `http://${req.headers.host ?? new URL(api.url).host}`,
    charge: (cost) => {
      if (!api.accounts.charge(apiKey, cost)) return false;
      api.stats.addCredits(cost);
      billed(cost);
      return true;
    },
  });
}

async function handleApi(api: ApiServer, req: IncomingMessage, res: ServerResponse, u: URL): Promise<void> {
  const method = req.method ?? 'GET';
  const rel = u.pathname.slice('/v1'.length);
  const match = api.router.match(method, rel);
  const endpoint = match !== undefined && match !== 'method' ? match.name : `${method} (unmatched)`;
  const step = api.faults.takeStep(method, rel);
  const started = Date.now();
  // read before any scripted answer: what the client asked to buy counts whatever the answer
  const body = await readBody(req, api.settings.maxBodyBytes);
  if (body !== undefined) recordBatchPost(api.catalog, api.stats, api.settings.platform, endpoint, body);
  // what this request was charged, sent back in `x-billable-requests` as the API does on every
  // answer (a step's own headers win; a gateway's page carries none)
  let billed = 0;
  const withBilling = (reply: Reply, own: Record<string, string> = {}): Reply =>
    api.faults.current().dropBillingHeader
      ? reply
      : { ...reply, headers: { [BILLING_HEADER]: String(billed), ...(reply.headers ?? {}), ...own } };
  const done = (status: number | 'reset' | 'hang') => {
    api.stats.record(endpoint, status);
    api.log.debug(
      {
        event: 'simulator.request',
        method,
        endpoint,
        status,
        ms: Date.now() - started,
        scripted: step !== undefined,
      },
      'simulator request',
    );
  };

  if (step?.delayMs) await sleep(step.delayMs);
  const latency = api.settings.latencyMs + api.faults.current().latencyMs;
  if (latency > 0) await sleep(latency);

  if (step && !step.process) {
    if (step.reset) {
      req.socket.destroy();
      return done('reset');
    }
    if (step.hang) return done('hang');
    if (step.status !== undefined) {
      const reply = withBilling(scriptedReply(step));
      done(reply.status);
      return writeReply(res, reply, {
        stall: step.stallBody,
        truncateAt: step.truncateAt,
        cutAfterMs: step.cutAfterMs,
        trickle: step.trickle,
      });
    }
  }
  if (!step) {
    const pre = api.faults.rollPre();
    if (pre === 'error') {
      done(500);
      return writeReply(res, withBilling(errorReply('internal-error', 'Internal server error.', 'injected fault')));
    }
    if (pre === 'bad-gateway') {
      done(502);
      return writeReply(res, { kind: 'raw', status: 502, body: BAD_GATEWAY_HTML, contentType: 'text/html' });
    }
  }

  let reply = await answerOr500(api, endpoint, () =>
    answer(api, req, u, rel, match, body, (n) => {
      billed += n;
    }),
  );

  const damage: Damage = {};
  if (step) {
    // a processed step: the request took effect, now the answer is damaged as scripted
    if (step.reset) {
      req.socket.destroy();
      return done('reset');
    }
    if (step.hang) return done('hang');
    if (step.status !== undefined) reply = scriptedReply(step);
    reply = withBilling(reply, step.headers);
    damage.stall = step.stallBody;
    damage.truncateAt = step.truncateAt;
    damage.cutAfterMs = step.cutAfterMs;
    damage.trickle = step.trickle;
    // a cut at a share of the whole body, or a trickle, needs the body's length
    if (step.truncateAt !== undefined || step.trickle) reply = materialize(reply);
  } else {
    reply = withBilling(reply);
    const post = api.faults.rollPost();
    if (post === 'reset') {
      req.socket.destroy();
      return done('reset');
    }
    if (post === 'truncate') damage.truncateAt = api.faults.cutFraction();
    if (post === 'schema-violation' && reply.status >= 200 && reply.status < 300 && reply.status !== 206) {
      damage.violate = true;
    }
  }
  done(reply.status);
  await writeReply(res, reply, damage);
}

/** The handler's answer; a handler that throws is the simulator's own failure, answered with a 500. */
async function answerOr500(api: ApiServer, endpoint: string, run: () => Promise<Reply>): Promise<Reply> {
  try {
    return await run();
  } catch (e: unknown) {
    api.log.error({ event: 'simulator.handler_failed', err: e, endpoint }, 'simulator handler failed');
    return errorReply('internal-error', 'Internal server error.', 'the simulator failed to answer');
  }
}
