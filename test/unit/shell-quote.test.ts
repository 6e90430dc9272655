/**
 * Words of a command a message suggests (issue #27): a shell reads each back unchanged, so a
 * pasted hint runs that command and nothing else; the backfill summary's hint with a job ID.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { renderBackfillReport } from '../../src/cli/backfill.ts';
import type { BackfillReport } from '../../src/pipeline/commands/backfill.ts';
import { shellCommand, shellQuote } from '../../src/shell-quote.ts';

const ESC = '\x1b';
const UNSAFE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

describe('shellQuote', () => {
  it('leaves a plain word bare and single-quotes the rest; a shell reads every word back unchanged and runs nothing', () => {
    expect(shellQuote('batch_1a2b-3c.4')).toBe('batch_1a2b-3c.4');
    expect(shellQuote('')).toBe("''");
    expect(shellQuote('$(touch /tmp/x)')).toBe("'$(touch /tmp/x)'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    const words = [
      '$(echo pwned)',
      '`echo pwned`',
      "a'b",
      'a;b && c | d',
      'new\nline',
      `esc${ESC}[2J`,
      'ünïcode \u202e',
      '*',
      '~',
      '!x',
      '"$HOME"',
    ];
    for (const w of words) {
      const echoed = execFileSync('bash', ['-c', `printf '%s' ${shellQuote(w)}`]).toString();
      expect(echoed, w).toBe(w);
    }
    expect(shellCommand('videosite-ingest', 'replay', '--batch', '$(x)', 5)).toBe(
      "videosite-ingest replay --batch '$(x)' 5",
    );
  });

  it('a word with control characters is written with escapes, so the hint shows no raw control', () => {
    const q = shellQuote(`job${ESC}[2J\n`);
    expect(q).toBe("$'job\\x1b[2J\\x0a'");
    expect(q).not.toMatch(UNSAFE);
  });
});

describe('the backfill summary', () => {
  it('shows upstream job IDs without controls, and quotes them in the command it suggests', () => {
    const jobId = `$(touch /tmp/pwned)${ESC}[2J`;
    const report = {
      syncs: [],
      syncErrors: [],
      batches: [
        {
          jobId,
          sourceId: 1,
          kind: 'video',
          lang: null,
          status: 'completed',
          errorCode: null,
          total: 2,
          sunk: 1,
          failed: 0,
          retryable: 0,
          quarantined: 1,
          processing: 0,
          landed: 0,
          errors: {},
        },
      ],
      problems: [`batch ${jobId} (video, source 1): 1 item(s) quarantined (kept raw with the reason)`],
      exitCode: 1,
      waited: true,
      timedOut: false,
    } as unknown as BackfillReport;
    const out = renderBackfillReport(report);
    expect(out).not.toMatch(UNSAFE);
    expect(out).toContain(`videosite-ingest replay --quarantined --batch $'$(touch /tmp/pwned)\\x1b[2J' --dry-run`);
  });
});
