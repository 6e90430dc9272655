/**
 * Web sources. `website`: one site, crawled at each sync from its URL (the crawl stays under that
 * URL's path); `--limit` is the most pages a crawl may take (and what it is estimated at).
 * `pages`: any number of page URLs a person gave (arguments, or a file with one per line), each
 * scraped at each sync. Their syncs are src/pipeline/ingest/sync-pages.ts; they list no videos.
 */
import { createHash } from 'node:crypto';
import { WEB_DOCUMENTS } from '../ingest/sync-pages.ts';
import { WEBSITE_LIMIT_DEFAULT, WEBSITE_LIMIT_MAX } from '../../domain/pages.ts';
import { refuseOptions, SourceSpecError, type SourceAdapter, type SourceRef, type SourceSpec } from './adapter.ts';

/** How many bad references one error names. */
const BAD_REFS_SHOWN = 5;

/** An http(s) URL without its fragment (a fragment names a place in a page, not another page). */
function pageUrl(value: string): string | undefined {
  let u: URL;
  try {
    u = new URL(value.trim());
  } catch {
    return undefined;
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') return undefined;
  if (u.username !== '' || u.password !== '') return undefined;
  u.hash = '';
  return u.href;
}

function parseUrls(refs: readonly SourceRef[], kind: string): string[] {
  const urls: string[] = [];
  const bad: string[] = [];
  for (const r of refs) {
    const url = pageUrl(r.value);
    if (url === undefined) bad.push(`${r.where}: ${JSON.stringify(r.value)}`);
    else urls.push(url);
  }
  if (bad.length > 0) {
    const more = bad.length > BAD_REFS_SHOWN ? ` (and ${bad.length - BAD_REFS_SHOWN} more)` : '';
    throw new SourceSpecError(
      `not a web page URL: ${bad.slice(0, BAD_REFS_SHOWN).join('; ')}${more}; ` +
        'expected an http:// or https:// URL without a user or password, such as https://example.com/docs; nothing was registered',
    );
  }
  if (urls.length === 0)
    throw new SourceSpecError(
      `a ${kind} source needs a URL (${kind === 'pages' ? 'arguments or --file' : 'one argument'})`,
    );
  return [...new Set(urls)];
}

/** Options that only video sources take. */
function refuseVideoOptions(spec: SourceSpec): void {
  if (spec.langs.length > 0) throw new SourceSpecError(`--lang applies to video sources, not to a ${spec.kind} source`);
  if (spec.textOnly) throw new SourceSpecError(`--text applies to video sources, not to a ${spec.kind} source`);
  if (spec.generateMissing)
    throw new SourceSpecError(`--generate-missing applies to video sources, not to a ${spec.kind} source`);
}

export const websiteAdapter: SourceAdapter = {
  kind: 'website',

  parse(spec) {
    refuseOptions(spec, { limit: true });
    refuseVideoOptions(spec);
    if (spec.refs.length !== 1) throw new SourceSpecError(`a website source takes one URL, not ${spec.refs.length}`);
    parseUrls(spec.refs, 'website');
    if (spec.limit !== undefined && (spec.limit < 1 || spec.limit > WEBSITE_LIMIT_MAX)) {
      throw new SourceSpecError(`--limit ${spec.limit}: a crawl takes 1..${WEBSITE_LIMIT_MAX} pages`);
    }
    return spec;
  },

  async resolve(_deps, spec) {
    const [url] = parseUrls(spec.refs, 'website');
    return {
      ref: spec.refs[0]!.value,
      externalId: url!,
      title: url!,
      maxVideos: spec.limit ?? WEBSITE_LIMIT_DEFAULT,
      search: null,
      videoIds: [],
    };
  },

  async refresh() {
    // a site has no record of its own: its pages are its content
  },

  async list() {
    return { videoIds: [], credits: 0 };
  },

  buildBatches: () => [],
  documents: WEB_DOCUMENTS,
};

export const pagesAdapter: SourceAdapter = {
  kind: 'pages',

  parse(spec) {
    refuseOptions(spec, {});
    refuseVideoOptions(spec);
    parseUrls(spec.refs, 'pages');
    return spec;
  },

  async resolve(_deps, spec) {
    const urls = parseUrls(spec.refs, 'pages');
    // the same set of URLs (in any order) is the same source
    const digest = createHash('sha256')
      .update([...urls].sort().join('\n'))
      .digest('hex')
      .slice(0, 16);
    const n = urls.length;
    return {
      ref: spec.origin ?? (n === 1 ? urls[0]! : `${n} pages`),
      externalId: `pages:${digest}`,
      title: `${n} page${n === 1 ? '' : 's'}${spec.origin ? ` from ${spec.origin}` : ''}`,
      maxVideos: n,
      search: null,
      videoIds: [],
      pageUrls: urls,
    };
  },

  async refresh() {
    // a list of pages has no record of its own
  },

  async list() {
    return { videoIds: [], credits: 0 };
  },

  buildBatches: () => [],
  documents: WEB_DOCUMENTS,
};
