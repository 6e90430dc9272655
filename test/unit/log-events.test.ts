/**
 * Log events are an interface: every log call in src/ names its event, from the one list in
 * src/log-events.ts, and every name on that list is logged somewhere. Tests and the benchmark
 * match on these names (typed as `LogEvent`), so a call that lost its `event` would make them
 * wait or count in vain; this test names the call instead.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isLogEvent, LOG_EVENTS } from '../../src/log-events.ts';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));
const LOG_CALL = /\blog\s*\.\s*(?:trace|debug|info|warn|error|fatal)\s*\(/g;
const EVENT_FIELD = /\bevent:\s*'([^']*)'/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sourceFiles(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
  );
}

/** The text without comments (an example call in a doc comment is not a call). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/(^|\s)\/\/(\s.*)?$/gm, '$1');
}

/** The arguments of the call whose `(` is at `open`: up to the matching `)`, strings skipped. */
function callArguments(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'" || c === '"' || c === '`') {
      // skip the literal (a `${...}` inside a template holds no quote of the same kind here)
      for (i++; i < text.length && text[i] !== c; i++) if (text[i] === '\\') i++;
      continue;
    }
    if (c === '(') depth++;
    if (c === ')' && --depth === 0) return text.slice(open + 1, i);
  }
  throw new Error(`unbalanced call at offset ${open}`);
}

interface LogCall {
  where: string;
  event: string | undefined;
}

function logCalls(): LogCall[] {
  return sourceFiles(SRC).flatMap((file) => {
    const text = withoutComments(readFileSync(file, 'utf8'));
    return [...text.matchAll(LOG_CALL)].map((m) => {
      const args = callArguments(text, m.index + m[0].length - 1);
      const line = text.slice(0, m.index).split('\n').length;
      return { where: `${relative(SRC, file)}:${line}`, event: EVENT_FIELD.exec(args)?.[1] };
    });
  });
}

describe('log events', () => {
  const calls = logCalls();

  it('finds the log calls it checks', () => {
    // a scanner that matched nothing would pass every check below
    expect(calls.length).toBeGreaterThan(50);
    expect(
      calls.find((c) => c.where.startsWith(join('cli', 'daemon.ts')) && c.event === 'daemon.started'),
    ).toBeDefined();
  });

  it('every log call in src/ carries an event field', () => {
    expect(calls.filter((c) => c.event === undefined).map((c) => c.where)).toEqual([]);
  });

  it('every event logged is on the list in src/log-events.ts', () => {
    expect(
      calls.filter((c) => c.event !== undefined && !isLogEvent(c.event)).map((c) => `${c.where} ${c.event}`),
    ).toEqual([]);
  });

  it('every event on the list is logged somewhere, once on the list, as a dotted lower-case name', () => {
    const logged = new Set(calls.map((c) => c.event));
    expect(LOG_EVENTS.filter((name) => !logged.has(name))).toEqual([]);
    expect(new Set(LOG_EVENTS).size).toBe(LOG_EVENTS.length);
    for (const name of LOG_EVENTS) expect(name).toMatch(/^[a-z]+(?:_[a-z]+)*(?:\.[a-z]+(?:_[a-z]+)*)+$/);
  });
});
