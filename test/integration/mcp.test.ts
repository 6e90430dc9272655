/**
 * `videosite-ingest mcp` (issue #31, point 3), as an agent's client meets it: a corpus backfilled
 * from the simulator over real HTTP (a channel's timed transcripts, a website's pages, a TikTok
 * video's transcript), then the built CLI started as a process and spoken to by the official
 * SDK's Client, over stdio and over streamable HTTP. The client lists the tools, searches and gets
 * a hit whose link opens the video at the hit's second, reads that moment of the transcript back
 * (the words are there), reads a page section and a media transcript, lists the sources with
 * the counts in the tables, and lists recent changes. Over HTTP, a request without the token or
 * with a wrong one is refused (401) and the command does not start without ADMIN_TOKEN.
 */
import { request as httpRequest } from 'node:http';
import { MCP_HTTP_BODY_MAX_BYTES } from '../../src/mcp/http.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';
import { REPO_ROOT, startCli, waitUntil, type CliProcess } from '../helpers/proc.ts';

const TOKEN = 'mcp-test-token-0123456789abcdef';
const URL_TEMPLATE = 'https://videos.example/watch?v={id}&t={seconds}';
const ORIGIN = 'https://docs.example.test';
const TOOLS = ['list_sources', 'read_media', 'read_page', 'read_transcript', 'recent_changes', 'search'];

let h: PipelineHarness;
let env: Record<string, string>;
let tiktok: string;
const sourceIds: number[] = [];

const cli = (args: string[], more: Record<string, string> = {}): Promise<CliResult> =>
  runCli(args, { ...h.env, ...more }, 90_000);

function addedSourceId(r: CliResult): number {
  expectExit(r, 0);
  return Number(/^source (\d+) added/m.exec(r.stdout)![1]);
}

beforeAll(async () => {
  h = await createPipelineHarness('mcp', {
    catalog: {
      channels: 1,
      channelSizes: [6],
      shortsPerChannel: 0,
      livesPerChannel: 0,
      noTranscriptShare: 0,
      privateShare: 0,
      goneShare: 0,
    },
    jobs: { crawlPageMs: 1 },
  });
  h.sim.web.editSite(ORIGIN, { size: 6 });
  h.startWorkers(['poller', 'sink']);
  env = { ...h.env, VIDEO_URL_TEMPLATE: URL_TEMPLATE, ADMIN_TOKEN: TOKEN };
  const ch = h.sim.catalog.channels()[0]!;
  const ids = h.sim.catalog.videoIds(ch.id)!;
  for (const id of ids) {
    const langs = h.sim.catalog.videoInfo(id)!.transcriptLanguages;
    if (!langs.includes('en')) h.sim.catalog.editVideo(id, { transcriptLanguages: ['en', ...langs] });
  }
  for (let n = 1000; ; n++) {
    const u = `https://www.tiktok.com/@user/video/${n}`;
    if (h.sim.media.hasSpeech(u)) {
      tiktok = u;
      break;
    }
  }
  sourceIds.push(addedSourceId(await cli(['sources', 'add', 'channel', ch.handle, '--limit', '10', '--lang', 'en'])));
  sourceIds.push(addedSourceId(await cli(['sources', 'add', 'website', `${ORIGIN}/`, '--limit', '10'])));
  sourceIds.push(addedSourceId(await cli(['sources', 'add', 'media', tiktok])));
  for (const id of sourceIds) expectExit(await cli(['backfill', '--source', String(id), '--timeout', '60s']), 0);
}, 240_000);

afterAll(async () => {
  await h?.close();
});

/** A phrase said in a chunk of a stored transcript away from the start: what a search must find at that chunk. */
async function storedPhrase(): Promise<{ videoId: string; words: string }> {
  const rows = await h.database.sql<{ videoId: string; text: string }[]>`
    select t.video_id as "videoId", c->>'text' as text
    from transcripts t, jsonb_array_elements(t.chunks) with ordinality as x(c, i)
    where t.lang = 'en' and x.i > 3 and (c->>'offset')::float8 > 5000
    order by t.video_id, x.i`;
  for (const r of rows) {
    const words = r.text.split(/\s+/).filter((w) => /^[a-z]{4,}$/i.test(w));
    if (words.length >= 3) return { videoId: r.videoId, words: `"${words.slice(0, 3).join(' ')}"` };
  }
  throw new Error('no chunk with three plain words');
}

function structured<T>(r: Awaited<ReturnType<Client['callTool']>>): T {
  const result = r as CallToolResult;
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  expect(result.content[0]?.type).toBe('text');
  return result.structuredContent as T;
}

/** What a model reads of an answer. */
function textOf(r: Awaited<ReturnType<Client['callTool']>>): string {
  return ((r as CallToolResult).content[0] as { text: string }).text;
}

function errorText(r: Awaited<ReturnType<Client['callTool']>>): string {
  const result = r as CallToolResult;
  expect(result.isError).toBe(true);
  return (result.content[0] as { text: string }).text;
}

interface VideoHit {
  kind: string;
  video_id?: string;
  seconds?: number | null;
  moment?: string | null;
  snippet: string;
  url: string | null;
}
interface Line {
  seconds: number;
  text: string;
  url: string | null;
}

/** What every client checks, whatever the transport. */
async function exercise(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
  expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);

  // search: the hit's link opens the video at the hit's second, and that second holds the words
  const phrase = await storedPhrase();
  const searched = await client.callTool({
    name: 'search',
    arguments: { words: phrase.words, kind: 'video', limit: 5 },
  });
  const found = structured<{ hits: VideoHit[] }>(searched);
  const hit = found.hits.find((x) => x.video_id === phrase.videoId);
  expect(hit, JSON.stringify(found)).toBeDefined();
  expect(hit!.seconds).toEqual(expect.any(Number));
  const link = new URL(hit!.url!);
  expect(link.searchParams.get('v')).toBe(phrase.videoId);
  expect(Number(link.searchParams.get('t'))).toBe(hit!.seconds);
  expect(hit!.snippet).toContain('«');
  // the model reads the same link in the text
  expect(textOf(searched)).toContain(hit!.url!);

  // read_transcript: that second, back with its words and links at each line's second
  const readAnswer = await client.callTool({
    name: 'read_transcript',
    arguments: { video_id: phrase.videoId, from: hit!.seconds!, to: hit!.seconds! + 1 },
  });
  const read = structured<{ lang: string; lines: Line[]; next_from: number | null }>(readAnswer);
  expect(read.lang).toBe('en');
  expect(read.lines.length).toBeGreaterThan(0);
  expect(read.lines.every((l) => l.seconds >= hit!.seconds! && l.seconds < hit!.seconds! + 1)).toBe(true);
  expect(read.lines.map((l) => l.text.toLowerCase()).join(' ')).toContain(
    phrase.words.replaceAll('"', '').split(' ')[0]!.toLowerCase(),
  );
  for (const l of read.lines) expect(new URL(l.url!).searchParams.get('t')).toBe(String(l.seconds));
  // as text: one "h:mm:ss words <link>" line each
  expect(textOf(readAnswer).split('\n').slice(1)).toEqual(
    read.lines.map((l) => `${hit!.moment} ${l.text.replace(/\s+/g, ' ').trim()} <${l.url}>`),
  );
  // a range the transcript does not reach: no lines, not an error
  const past = structured<{ lines: Line[] }>(
    await client.callTool({ name: 'read_transcript', arguments: { video_id: phrase.videoId, from: 1e7 } }),
  );
  expect(past.lines).toEqual([]);

  // bad input: the field named, and what is valid
  expect(errorText(await client.callTool({ name: 'search', arguments: { words: 'x', kind: 'book' } }))).toMatch(
    /kind: expected one of video, page, media/,
  );
  expect(errorText(await client.callTool({ name: 'search', arguments: { words: 'x', limit: 51 } }))).toMatch(
    /limit: expected a whole number from 1 to 50/,
  );
  expect(
    errorText(await client.callTool({ name: 'read_transcript', arguments: { video_id: phrase.videoId, lang: 'xx' } })),
  ).toMatch(/lang: no "xx" transcript of .*; stored: en/);

  // read_page: a page's section by its anchor, with the link to it
  const [page] = await h.database.sql<{ url: string; content: string }[]>`
    select url, content from pages where content ~ '(^|\n)## ' order by url limit 1`;
  expect(page, 'a stored page with a second-level heading').toBeDefined();
  const whole = structured<{ sections: { anchor: string; heading: string; link: string }[]; text: string }>(
    await client.callTool({ name: 'read_page', arguments: { url: page!.url } }),
  );
  expect(whole.text).toBe(page!.content);
  const second = whole.sections[1] ?? whole.sections[0]!;
  const section = structured<{ anchor: string; link: string; text: string }>(
    await client.callTool({ name: 'read_page', arguments: { url: page!.url, section: second.anchor } }),
  );
  expect(section.link).toBe(second.link);
  expect(new URL(section.link).hash).toBe(`#${second.anchor}`);
  expect(page!.content).toContain(section.text.split('\n').at(-1)!);
  // by its heading's text too; an unknown one named with the anchors there are
  const byHeading = structured<{ anchor: string }>(
    await client.callTool({
      name: 'read_page',
      arguments: { url: page!.url, section: second.heading.split(' › ').at(-1)!.toUpperCase() },
    }),
  );
  expect(byHeading.anchor).toBe(second.anchor);
  expect(
    errorText(await client.callTool({ name: 'read_page', arguments: { url: page!.url, section: 'no-such-part' } })),
  ).toContain(`section: no section "no-such-part" in ${page!.url}; its anchors: ${whole.sections[0]!.anchor}`);

  // read_media: the TikTok's transcript as timed lines
  const media = structured<{ lines: Line[]; url: string }>(
    await client.callTool({ name: 'read_media', arguments: { url: tiktok } }),
  );
  const [stored] = await h.database.sql<{ n: number }[]>`
    select jsonb_array_length(transcript_content)::int as n from media where url = ${tiktok}`;
  expect(media.lines.length).toBe(stored!.n);
  expect(media.lines.length).toBeGreaterThan(0);
  // a TikTok URL takes no start time: each line links to the post
  expect(media.lines.every((l) => l.url === tiktok)).toBe(true);

  // list_sources: the three, with what the tables hold of each
  const listed = structured<{
    sources: {
      id: number;
      kind: string;
      videos: number;
      transcripts: number;
      pages: number;
      media: number;
      last_synced_at: string | null;
    }[];
  }>(await client.callTool({ name: 'list_sources', arguments: {} }));
  expect(listed.sources.map((s) => s.id)).toEqual(sourceIds);
  expect(listed.sources.map((s) => s.kind)).toEqual(['channel', 'website', 'media']);
  const [counts] = await h.database.sql<{ transcripts: number; pages: number }[]>`
    select (select count(*)::int from transcripts t join source_videos sv on sv.video_id = t.video_id where sv.source_id = ${sourceIds[0]!}) as transcripts,
      (select count(*)::int from source_pages where source_id = ${sourceIds[1]!} and gone_at is null) as pages`;
  expect(listed.sources[0]!.transcripts).toBe(counts!.transcripts);
  expect(listed.sources[1]!.pages).toBe(counts!.pages);
  expect(listed.sources[2]!.media).toBe(1);
  expect(listed.sources.every((s) => s.last_synced_at !== null)).toBe(true);

  // recent_changes: the newest first, each with its link; a cursor returns what follows it
  const recent = structured<{ changes: { id: number; type: string; video_id: string | null; url: string | null }[] }>(
    await client.callTool({ name: 'recent_changes', arguments: { limit: 500 } }),
  );
  const [corpus] = await h.database.sql<{ n: number }[]>`
    select count(*)::int as n from events where type ~ '^(video|transcript|page|media)\\.'`;
  expect(recent.changes.length).toBe(corpus!.n);
  expect(recent.changes.map((c) => c.id)).toEqual([...recent.changes.map((c) => c.id)].sort((a, b) => b - a));
  for (const c of recent.changes) {
    expect(c.url, JSON.stringify(c)).not.toBeNull();
    if (c.type.startsWith('transcript.')) expect(new URL(c.url!).searchParams.get('v')).toBe(c.video_id);
  }
  const cursor = recent.changes[3]!.id;
  const after = structured<{ changes: { id: number }[] }>(
    await client.callTool({ name: 'recent_changes', arguments: { after_id: cursor } }),
  );
  expect(after.changes.map((c) => c.id)).toEqual(
    recent.changes
      .slice(0, 3)
      .map((c) => c.id)
      .reverse(),
  );
  const pagesOnly = structured<{ changes: { type: string }[] }>(
    await client.callTool({ name: 'recent_changes', arguments: { types: ['page.added'] } }),
  );
  expect(pagesOnly.changes.length).toBe(counts!.pages);
  const later = new Date(Date.now() + 60_000).toISOString();
  for (const args of [{ since: later }, { since: later, after_id: 0 }]) {
    const none = structured<{ changes: unknown[] }>(await client.callTool({ name: 'recent_changes', arguments: args }));
    expect(none.changes).toEqual([]);
  }
  expect(errorText(await client.callTool({ name: 'recent_changes', arguments: { since: 'yesterday' } }))).toMatch(
    /since: expected an ISO 8601 time/,
  );
  expect(
    errorText(await client.callTool({ name: 'recent_changes', arguments: { types: ['batch.completed'] } })),
  ).toMatch(/types: expected any of video.added, /);

  // never a secret: nothing the tools said holds the token or the API key
  const everything = JSON.stringify([found, read, whole, section, media, listed, recent]);
  expect(everything).not.toContain(TOKEN);
  expect(everything).not.toContain(h.env.API_KEY!);
}

describe('mcp over stdio', () => {
  it('lists the tools, searches with links, reads, lists sources and changes; stdout carries the protocol only', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['bin/videosite-ingest.js', 'mcp'],
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    // a line on stdout that is not the protocol is an error here
    const transportErrors: Error[] = [];
    client.onerror = (e) => transportErrors.push(e);
    await client.connect(transport);
    try {
      expect(client.getServerVersion()?.name).toBe('videosite-ingest');
      await exercise(client);
    } finally {
      await client.close();
    }
    expect(transportErrors, stderr).toEqual([]);
  }, 120_000);
});

describe('mcp over streamable HTTP', () => {
  let proc: CliProcess;
  let url: string;

  beforeAll(async () => {
    proc = startCli(['mcp', '--http', '--port', '0'], env, 'mcp-http');
    url = await waitUntil(
      () => {
        if (!proc.running()) throw new Error(`mcp --http exited: ${proc.stderr()}`);
        return /serving (http:\S+)/.exec(proc.stderr())?.[1];
      },
      60_000,
      'mcp --http listening',
    );
  }, 90_000);

  afterAll(async () => {
    proc?.kill('SIGTERM');
    const r = await proc?.exited;
    expect(r?.code).toBe(0);
  });

  it('answers an SDK client presenting ADMIN_TOKEN', async () => {
    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      }),
    );
    try {
      await exercise(client);
    } finally {
      await client.close();
    }
  }, 120_000);

  it('refuses (401) a request without the token and with a wrong one, and an SDK client without it', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
    };
    const post = (headers: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(initialize),
      });
    const none = await post({});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect((await post({ authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    expect((await post({ authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` })).status).toBe(401);
    const good = await post({ authorization: `Bearer ${TOKEN}` });
    expect(good.status).toBe(200);
    expect(((await good.json()) as { result: { serverInfo: { name: string } } }).result.serverInfo.name).toBe(
      'videosite-ingest',
    );

    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(url)))).rejects.toThrow();
  }, 60_000);

  it('refuses a rebound Host name (421) before the token, and a body over its bound (413)', async () => {
    const send = (host: string, body: string) =>
      new Promise<number>((resolve, reject) => {
        const u = new URL(url);
        const req = httpRequest(
          {
            host: u.hostname,
            port: u.port,
            path: u.pathname,
            method: 'POST',
            headers: {
              host,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              authorization: `Bearer ${TOKEN}`,
              'content-length': Buffer.byteLength(body),
            },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(await send('attacker.example:8788', ping)).toBe(421);
    expect(await send(new URL(url).host, JSON.stringify({ pad: 'x'.repeat(MCP_HTTP_BODY_MAX_BYTES) }))).toBe(413);
  }, 60_000);

  it('does not start without ADMIN_TOKEN, naming it', async () => {
    const { ADMIN_TOKEN: _t, ...without } = env;
    const r = await runCli(['mcp', '--http', '--port', '0'], without, 30_000);
    expectCleanError(r, 2, /ADMIN_TOKEN/, /bearer token/);
    expectCleanError(await runCli(['mcp', '--port', '8788'], env, 30_000), 2, '--port applies to --http only');
  }, 60_000);
});
