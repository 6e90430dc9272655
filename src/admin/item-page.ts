/**
 * An item's page (`/batches/:jobId/items/:videoId`): its state, error code and reason, and the
 * raw item as stored, pretty-printed and escaped (an upstream payload may hold HTML). At most
 * ITEM_VIEW_MAX_BYTES of it is shown (an item may be up to ITEM_MAX_BYTES, 8 MiB): the page says
 * when it is cut and how to read the whole. An item whose payload retention dropped shows when,
 * and the sha256 and size kept in its place.
 */
import { batchItemView, type BatchItemView } from '../db/admin-pages.ts';
import { databaseNow } from '../db/connection.ts';
import type { Pool } from '../db/statement-timeout.ts';
import { readHolds, type HoldsStatus } from '../pipeline/read/status.ts';
import { itemStatePill } from './batch-page.ts';
import { compactBytes } from './chart.ts';
import { html, type SafeHtml } from './html.ts';
import { batchHref, jobLink, notFoundBody, renderPage, unavailable, when } from './layout.ts';
import { readPageSections, type PageReadOptions } from './page-sections.ts';
import { shellQuote } from '../shell-quote.ts';

/**
 * The most of a raw item the page shows, bytes (UTF-8). A transcript of an hour is ~60 kB of
 * JSON; beyond this a browser tab slows and a person reads it with psql anyway.
 */
export const ITEM_VIEW_MAX_BYTES = 256 * 1024;

export interface ItemPageData {
  now: Date;
  holds?: HoldsStatus;
  /** null: no such item; undefined: not readable */
  item?: BatchItemView | null;
  unavailable: string[];
}

export async function loadItemPage(
  pool: Pool,
  jobId: string,
  videoId: string,
  opts: PageReadOptions,
): Promise<ItemPageData> {
  let now = new Date();
  const { values, unavailable } = await readPageSections<Omit<ItemPageData, 'unavailable'>>(pool, 'item', opts, {
    now: async (q) => (now = await databaseNow(q)),
    holds: (q) => readHolds(q, opts.keyFingerprint),
    item: async (q) => {
      // a NUL cannot be in a text column: no such item (and no query that would fail on it)
      if (`${jobId}${videoId}`.includes('\u0000')) return null;
      // characters, not bytes: a character is 1-4 bytes, so this many always covers the bytes shown
      return (await batchItemView(q, jobId, videoId, ITEM_VIEW_MAX_BYTES)) ?? null;
    },
  });
  return { ...values, now, unavailable };
}

/** The longest start of `text` that is at most `maxBytes` in UTF-8, cut between characters. */
export function utf8Prefix(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  // back off over continuation bytes (10xxxxxx) to the start of the character the cut would split
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/** A string literal of SQL (for the psql line a person may copy; the whole line is quoted for a shell, so an upstream job ID runs nothing). */
const sqlLiteral = (s: string) => `'${s.replace(/'/g, "''")}'`;

function payload(i: BatchItemView, maxBytes: number, now: Date): SafeHtml {
  if (i.form === null) {
    if (i.payloadPrunedAt !== null) {
      return html`<p id="pruned">Pruned by retention ${when(i.payloadPrunedAt, now)} (RAW_RETENTION_DAYS): the row, its state and error code stay; the raw item is gone.</p>
        <dl class="facts">
          <dt>sha256</dt><dd><code>${i.payloadSha256 ?? 'not recorded'}</code></dd>
          <dt>size</dt><dd>${i.payloadBytes === null ? html`<span class="muted">not recorded</span>` : `${i.payloadBytes} bytes (${compactBytes(i.payloadBytes)})`}</dd>
        </dl>`;
    }
    return html`<p class="muted">No raw copy is stored for this item.</p>`;
  }
  const text = i.text ?? '';
  const shown = utf8Prefix(text, maxBytes);
  const whole = i.textBytes ?? Buffer.byteLength(text, 'utf8');
  const truncated = whole > Buffer.byteLength(shown, 'utf8');
  const column = i.form === 'json' ? 'payload' : 'payload_raw';
  return html`<p class="small muted">${
    i.form === 'json'
      ? 'As stored (jsonb, pretty-printed by Postgres: keys in jsonb order, values exactly as stored).'
      : 'As received, kept as text (payload_raw): jsonb could not hold it, or it was too large to parse.'
  } ${compactBytes(whole)}.</p>
    ${
      truncated
        ? html`<p class="banner" role="status" id="truncated">Truncated: the first ${compactBytes(Buffer.byteLength(shown, 'utf8'))} of ${compactBytes(whole)} shown. The whole item:
            <code>psql -c ${shellQuote(`select ${column} from batch_items where job_id = ${sqlLiteral(i.jobId)} and video_id = ${sqlLiteral(i.videoId)}`)}</code></p>`
        : ''
    }
    <pre class="payload" id="payload">${shown}</pre>`;
}

export function renderItemPage(
  d: ItemPageData,
  opts: { queuesPath?: string; jobId: string; videoId: string; maxBytes?: number },
): { status: 200 | 404 | 503; html: string } {
  const { now } = d;
  const frame = { now, holds: d.holds, unavailable: d.unavailable, queuesPath: opts.queuesPath };
  const crumbs = [
    { label: 'Overview', href: '/' },
    { label: 'Batches', href: '/batches' },
    { label: opts.jobId, href: batchHref(opts.jobId) },
    { label: opts.videoId },
  ];
  const i = d.item;
  if (i === null) {
    const body = notFoundBody(
      `Item ${JSON.stringify(opts.videoId)} of batch ${JSON.stringify(opts.jobId)}`,
      html`The batch's page lists its items: <a href="${batchHref(opts.jobId)}">${opts.jobId}</a>.`,
    );
    return { status: 404, html: renderPage({ ...frame, title: 'item not found', crumbs, body }) };
  }
  if (i === undefined)
    return {
      status: 503,
      html: renderPage({ ...frame, title: `item ${opts.videoId}`, crumbs, body: unavailable(`Item ${opts.videoId}`) }),
    };
  const body = html`<h2 class="page">Item <code>${i.videoId}</code> <span class="muted small">of batch ${jobLink(i.jobId)}</span></h2>
  <section id="item"><h2>State</h2><dl class="facts">
    <dt>state</dt><dd>${itemStatePill(i.state)}</dd>
    <dt>error code</dt><dd>${i.errorCode === null ? html`<span class="muted">none</span>` : html`<code>${i.errorCode}</code>`}</dd>
    <dt>reason</dt><dd>${i.reason === null ? html`<span class="muted">none</span>` : html`${i.reasonCode !== null ? html`<code>${i.reasonCode}</code> ` : ''}<span class="error">${i.reason}</span>`}</dd>
    <dt>landed</dt><dd>${when(i.landedAt, now, 'not landed')}</dd>
    <dt>stored</dt><dd>${when(i.sunkAt, now, 'not stored')}</dd>
    ${i.resubmittedIn !== null ? html`<dt>re-submitted in</dt><dd>${jobLink(i.resubmittedIn)}</dd>` : ''}
    <dt>changed</dt><dd>${when(i.updatedAt, now)}</dd>
  </dl></section>
  <section id="raw"><h2>Raw item</h2>${payload(i, opts.maxBytes ?? ITEM_VIEW_MAX_BYTES, now)}</section>`;
  return { status: 200, html: renderPage({ ...frame, title: `item ${i.videoId}`, crumbs, body }) };
}
