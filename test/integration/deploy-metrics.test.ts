/**
 * deploy/ names only metrics a daemon exports (issue 33): a real `daemon` against the simulator
 * syncs a source on its cron, and its /metrics is scraped; every metric name in the PromQL of the
 * Grafana dashboard (deploy/grafana/videosite-ingest.json) and of the alert rules
 * (deploy/prometheus/alerts.yml) must be a family of that scrape, with samples. A histogram's
 * `_bucket`, `_sum` and `_count` series count as its family; functions, keywords, label names,
 * strings, durations and Grafana variables are not metric names. The daemon has embeddings on
 * (the embeddings twin), so the embedder's series are there too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startEmbeddingsTwin, type EmbeddingsTwin } from '../../src/embeddings/twin.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { parseMetrics } from '../helpers/admin.ts';
import { createPipelineHarness, type PipelineHarness } from '../helpers/pipeline.ts';
import { freePort, REPO_ROOT, startCli, waitUntil, type CliProcess } from '../helpers/proc.ts';

/** Six fields: a tick every second (BullMQ's cron parser takes seconds; the CLI would refuse it). */
const EVERY_SECOND = '* * * * * *';
const WAIT_MS = 30_000;
const DASHBOARD = join(REPO_ROOT, 'deploy/grafana/videosite-ingest.json');
const ALERTS = join(REPO_ROOT, 'deploy/prometheus/alerts.yml');

/** Families declared in every scrape that have samples only after something failed. */
const SAMPLED_ONLY_ON_FAILURE = new Set(['vsi_metrics_collect_errors_total']);

const PROMQL_WORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'inf',
  'nan',
  'atan2',
]);

/**
 * The metric names a PromQL expression reads: what is left once strings, label matchers, label
 * lists of by/without/on/ignoring/group_*, ranges and durations, Grafana variables, numbers and
 * function calls are taken out.
 */
function metricNamesOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ') // strings
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/\[[^\]]*\]/g, ' ') // ranges, subqueries
    .replace(/\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/g, ' ') // Grafana variables
    .replace(/\boffset\s+-?[0-9a-z]+/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![A-Za-z0-9_:.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = m;
    if (call !== undefined || PROMQL_WORDS.has(name!.toLowerCase())) continue;
    names.add(name!);
  }
  return [...names];
}

/** Every target expression of a Grafana dashboard, panels of rows included. */
function dashboardExprs(path: string): string[] {
  type Panel = { targets?: { expr?: string }[]; panels?: Panel[] };
  const dash = JSON.parse(readFileSync(path, 'utf8')) as { panels: Panel[] };
  const walk = (ps: Panel[]): string[] =>
    ps.flatMap((p) => [...(p.targets ?? []).flatMap((t) => (t.expr ? [t.expr] : [])), ...walk(p.panels ?? [])]);
  return walk(dash.panels);
}

/** Every `expr:` of a Prometheus rules file: one line, or a block scalar (`|`, `>`) of the lines indented below it. */
function ruleExprs(path: string): string[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)expr:\s*(.*)$/.exec(lines[i]!);
    if (!m) continue;
    const [, indent, rest] = m;
    if (!/^[|>][-+]?\s*$/.test(rest!)) {
      out.push(rest!.replace(/^(['"])(.*)\1$/, '$2'));
      continue;
    }
    const block: string[] = [];
    while (i + 1 < lines.length && (lines[i + 1]!.trim() === '' || lines[i + 1]!.search(/\S/) > indent!.length))
      block.push(lines[++i]!.trim());
    out.push(block.join(' '));
  }
  return out;
}

/** The families of a scrape (`# TYPE` lines) and the names of its samples. */
function familiesOf(text: string): Map<string, { type: string; sampled: boolean }> {
  const families = new Map<string, { type: string; sampled: boolean }>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(m[1]!, { type: m[2]!, sampled: false });
  for (const s of parseMetrics(text)) {
    const f = families.get(s.name) ?? families.get(s.name.replace(/_(?:bucket|sum|count)$/, ''));
    if (f) f.sampled = true;
  }
  return families;
}

/** The family a referenced name belongs to: itself, or a histogram's or summary's for its `_bucket`, `_sum`, `_count`. */
function familyOf(
  name: string,
  families: Map<string, { type: string; sampled: boolean }>,
): { type: string; sampled: boolean } | undefined {
  const own = families.get(name);
  if (own) return own;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (!m) return undefined;
  const base = families.get(m[1]!);
  if (!base) return undefined;
  if (base.type === 'histogram') return base;
  return base.type === 'summary' && m[2] !== 'bucket' ? base : undefined;
}

describe('metricNamesOf', () => {
  it('keeps metric names and drops functions, keywords, labels, strings, ranges and variables', () => {
    expect(
      metricNamesOf(
        'histogram_quantile(0.95, sum by (le, endpoint) (rate(vsi_api_request_duration_seconds_bucket{status=~"5..|x"}[$__rate_interval])))',
      ),
    ).toEqual(['vsi_api_request_duration_seconds_bucket']);
    expect(
      metricNamesOf(
        'max by (source_id, kind) (a_seconds{source_id=~"$source"}) > 2 * on(source_id) group_left(kind) b_interval and max(c) > 0 or vector(1) unless d offset 5m',
      ).sort(),
    ).toEqual(['a_seconds', 'b_interval', 'c', 'd']);
    expect(metricNamesOf('max(predict_linear(used[6h], 86400)) >= max(allowed) and 1e3 > 0.5')).toEqual([
      'used',
      'allowed',
    ]);
  });
});

describe('the metrics deploy/ reads', () => {
  let h: PipelineHarness;
  let daemon: CliProcess | undefined;
  let twin: EmbeddingsTwin | undefined;

  beforeEach(async () => {
    h = await createPipelineHarness('deploy-metrics', {
      catalog: { channels: 1, channelSizes: [8], privateShare: 0, goneShare: 0 },
    });
  });

  afterEach(async () => {
    daemon?.kill('SIGKILL');
    await daemon?.exited;
    daemon = undefined;
    await twin?.close();
    twin = undefined;
    await h?.close();
  });

  it('are exported by a daemon that has synced a source', async () => {
    const referenced = new Set([...dashboardExprs(DASHBOARD), ...ruleExprs(ALERTS)].flatMap(metricNamesOf));
    // the parse found the expressions (29 dashboard targets, 7 rules), not nothing
    expect(referenced.size).toBeGreaterThanOrEqual(20);

    const ch = h.sim.catalog.channels()[0]!;
    const source = await registerSource(h.deps, {
      kind: 'channel',
      ref: ch.id,
      limit: 100,
      langs: [],
      textOnly: false,
      cron: EVERY_SECOND,
    });
    // a disabled webhook endpoint, so that its gauges have a series
    await h.database
      .sql`insert into webhook_endpoints (url, enabled, disabled_at) values ('http://127.0.0.1:9/hook', false, now())`;

    const port = await freePort();
    // embeddings on, so that the embedder's counters and the embeddings gauges have samples
    twin = await startEmbeddingsTwin();
    daemon = startCli(
      ['daemon', '--role', 'scheduler,poller,sink', '--admin-port', String(port)],
      { ...h.env, LOG_LEVEL: 'info', EMBEDDINGS_BASE_URL: twin.baseUrl, EMBEDDINGS_MODEL: 'twin-deploy' },
      'daemon',
    );
    // synced, billed and stored: the per-source and per-process series are there
    const text = await waitUntil(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => undefined);
        if (res?.status !== 200) return undefined;
        const body = await res.text();
        const ready = [
          `vsi_source_sync_interval_seconds{source_id="${source.id}"`,
          `vsi_source_credits_billed_today{source_id="${source.id}"}`,
          'vsi_rows_upserted_total{table="videos",outcome="inserted"}',
          'vsi_api_request_duration_seconds_bucket',
          'vsi_embedding_requests_total{outcome="embedded"}',
        ];
        return ready.every((s) => body.includes(s)) ? body : undefined;
      },
      WAIT_MS,
      'a daemon that has synced its source',
      500,
    );

    const families = familiesOf(text);
    const missing = [...referenced].filter((name) => familyOf(name, families) === undefined);
    expect(missing, 'metric names in deploy/ that the daemon does not export').toEqual([]);
    const unsampled = [...referenced].filter(
      (name) => !SAMPLED_ONLY_ON_FAILURE.has(name) && familyOf(name, families)?.sampled !== true,
    );
    expect(unsampled, 'metric names in deploy/ with no sample in the scrape').toEqual([]);
  });
});
