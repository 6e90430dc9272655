/**
 * The backfill's live progress: what a person sees on a terminal (a block of bars redrawn in
 * place) and in a log file (one line per batch that changed).
 */
import { describe, expect, it } from 'vitest';
import type { BatchProgress } from '../../src/db/batch-progress.ts';
import { batchLine, createProgressView, progressBar } from '../../src/cli/progress.ts';

function batch(over: Partial<BatchProgress> = {}): BatchProgress {
  return {
    jobId: 'batch_1',
    sourceId: 1,
    kind: 'video',
    lang: null,
    status: 'active',
    errorCode: null,
    upstreamStatus: null,
    reason: null,
    total: 100,
    finished: 0,
    polls: 1,
    creditsEstimated: 101,
    submittedAt: '2026-01-01T00:00:00.000Z',
    completedAt: null,
    processing: 0,
    landed: 0,
    sunk: 0,
    failed: 0,
    retryable: 0,
    quarantined: 0,
    errors: {},
    ...over,
  };
}

function sink(opts: { isTTY: boolean; columns?: number; rows?: number }) {
  const writes: string[] = [];
  return { writes, out: { ...opts, write: (s: string) => writes.push(s) } };
}

describe('progress bar', () => {
  it('shows stored, errors and what is left, in proportion', () => {
    expect(progressBar(batch({ sunk: 50, failed: 25 }), 8)).toBe('[████▒▒░░]');
    expect(progressBar(batch({ sunk: 100 }), 8)).toBe('[████████]');
    expect(progressBar(batch({ total: null }), 8)).toBe('[░░░░░░░░]');
    expect(progressBar(batch({ total: 0 }), 4)).toBe('[░░░░]');
  });

  it('a batch line names the batch, its counts and its errors', () => {
    const line = batchLine(batch({ sunk: 40, failed: 1, retryable: 2, landed: 7, lang: 'en', kind: 'transcript' }));
    expect(line).toContain('transcript en');
    expect(line).toContain('43/100 done, 3 errors');
    expect(line).toContain('active, 7 storing');
    expect(line).toContain('batch_1');
    expect(batchLine(batch({ total: null, status: 'submitted' }))).toContain('0/? done');
  });
});

describe('on a terminal', () => {
  it('draws one bar per batch under a summary, and redraws the block in place', () => {
    const { writes, out } = sink({ isTTY: true, columns: 200 });
    let now = 0;
    const view = createProgressView(out, { now: () => now });
    const a = batch({ jobId: 'batch_a' });
    const b = batch({ jobId: 'batch_b', kind: 'transcript', lang: 'en' });
    view.update([a, b]);
    expect(writes).toHaveLength(1);
    const first = writes[0]!;
    expect(first.startsWith('\x1b[')).toBe(false);
    const lines = first.split('\n');
    expect(lines).toHaveLength(4); // summary, two batches, and what follows the last newline
    expect(lines[0]).toContain('0/2 batches done');
    expect(lines[1]).toContain('batch_a');
    expect(lines[2]).toContain('batch_b');

    now = 5_000;
    view.update([{ ...a, sunk: 100, status: 'completed' }, b]);
    // back up over the three lines drawn, then redraw them
    expect(writes[1]!.startsWith('\x1b[3A\r')).toBe(true);
    expect(writes[1]).toContain('[5s] 1/2 batches done');
    expect(writes[1]).toContain('100/100 done');
    expect(writes[1]!.endsWith('\x1b[J')).toBe(true);
  });

  it('never grows past the terminal height, and keeps the running batches in sight', () => {
    const { writes, out } = sink({ isTTY: true, columns: 200, rows: 6 });
    const view = createProgressView(out);
    const many = Array.from({ length: 10 }, (_, i) =>
      batch({ jobId: `batch_${i}`, status: i < 7 ? 'completed' : 'active', sunk: i < 7 ? 100 : 0 }),
    );
    view.update(many);
    const lines = writes[0]!.split('\n').slice(0, -1);
    // rows - 2 lines: the summary, the first batches still running, one line for the rest
    expect(lines).toHaveLength(4);
    expect(lines[1]).toContain('batch_7');
    expect(lines[2]).toContain('batch_8');
    expect(lines[3]).toContain('8 more batches (7 done, 1 in progress)');
  });

  it('cuts lines to the terminal width (a wrapped line would break the redraw)', () => {
    const { writes, out } = sink({ isTTY: true, columns: 40 });
    createProgressView(out).update([batch()]);
    for (const l of writes[0]!.split('\n')) expect(l.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').length).toBeLessThan(40);
  });
});

describe('not on a terminal', () => {
  it('writes one plain line per batch that changed, without escape codes', () => {
    const { writes, out } = sink({ isTTY: false });
    const view = createProgressView(out);
    const a = batch({ jobId: 'batch_a' });
    const b = batch({ jobId: 'batch_b' });
    view.update([a, b]);
    view.update([{ ...a, sunk: 10 }, b]);
    view.update([{ ...a, sunk: 10 }, b]);
    const text = writes.join('');
    expect(text).not.toContain('\x1b');
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^backfill \[\d+s\] batch batch_a \(video, source 1\): 0\/100 done; active$/);
    expect(lines[1]).toContain('batch batch_b');
    expect(lines[2]).toMatch(/batch batch_a .*10\/100 done/);
  });
});
