/**
 * Real processes for the fault suite: the CLI (`node bin/videosite-ingest.js ...`) with its
 * structured logs collected line by line, so a test waits for what a process logs (the event
 * `daemon.started`) instead of sleeping, and can SIGKILL or SIGTERM it at the moment it chooses.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { LogEvent } from '../../src/log-events.ts';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A TCP port nobody listens on right now (127.0.0.1). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Poll `check` until it returns something other than undefined; fail after `timeoutMs` with
 * `what`. Errors thrown by `check` end the wait at once.
 */
export async function waitUntil<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  what: string,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** One pino line as a process wrote it (fields we read; anything else is kept). */
export interface LogLine {
  level: number;
  msg: string;
  time: number;
  /**
   * the stable event name (src/log-events.ts); tests match on it, never on `msg`. Typed, so a
   * comparison with a name no code logs does not compile.
   */
  event?: LogEvent;
  [k: string]: unknown;
}

/** The pino JSON lines of a captured stderr or log buffer; other lines are skipped. */
export function parseLogLines(text: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const p of text.split('\n')) {
    if (!p.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(p) as LogLine);
    } catch {
      // a line cut short by a killed process
    }
  }
  return lines;
}

export interface CliProcess {
  child: ChildProcess;
  pid: number;
  label: string;
  stdout(): string;
  stderr(): string;
  /** the JSON log lines written to stderr so far */
  logs(): LogLine[];
  /** resolves when a log line matching `pred` has been written (also one written before) */
  waitForLog(pred: (l: LogLine) => boolean, timeoutMs: number, what: string): Promise<LogLine>;
  /** exit code (null when killed by a signal) and signal */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  running(): boolean;
  kill(signal: NodeJS.Signals): void;
}

/** Start `videosite-ingest <args>` with exactly `env` (plus PATH and HOME). */
export function startCli(args: string[], env: Record<string, string>, label = args[0] ?? 'cli'): CliProcess {
  const child = spawn(process.execPath, ['bin/videosite-ingest.js', ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let partial = '';
  const lines: LogLine[] = [];
  const waiters: { pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    const text = d.toString();
    err += text;
    partial += text;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const p of parts) {
      if (!p.startsWith('{')) continue;
      let l: LogLine;
      try {
        l = JSON.parse(p) as LogLine;
      } catch {
        continue;
      }
      lines.push(l);
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i]!.pred(l)) waiters.splice(i, 1)[0]!.resolve(l);
      }
    }
  });
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      done = true;
      resolve({ code, signal });
    });
  });
  return {
    child,
    pid: child.pid ?? -1,
    label,
    stdout: () => out,
    stderr: () => err,
    logs: () => [...lines],
    waitForLog(pred, timeoutMs, what) {
      const seen = lines.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise<LogLine>((resolve, reject) => {
        const w = { pred, resolve: (l: LogLine) => (clearTimeout(timer), resolve(l)) };
        const timer = setTimeout(() => {
          const i = waiters.indexOf(w);
          if (i >= 0) waiters.splice(i, 1);
          reject(
            new Error(
              `${label} (pid ${child.pid}): no log line "${what}" within ${timeoutMs} ms; exit ${done ? 'yes' : 'no'}; stderr tail:\n${err.slice(-3000)}`,
            ),
          );
        }, timeoutMs);
        waiters.push(w);
        void exited.then(() => {
          // a process that ended cannot write the line any more: fail now, not at the timeout
          setTimeout(() => {
            const i = waiters.indexOf(w);
            if (i < 0) return;
            waiters.splice(i, 1);
            clearTimeout(timer);
            reject(
              new Error(
                `${label} (pid ${child.pid}) exited before logging "${what}"; stderr tail:\n${err.slice(-3000)}`,
              ),
            );
          }, 50);
        });
      });
    },
    exited,
    running: () => !done,
    kill(signal) {
      if (!done) child.kill(signal);
    },
  };
}

/** Run `videosite-ingest <args>` to its end. */
export async function runCliToEnd(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 120_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  const p = startCli(args, env);
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
  const r = await p.exited;
  clearTimeout(timer);
  return { ...r, stdout: p.stdout(), stderr: p.stderr(), ms: Date.now() - started };
}

/**
 * Run `cleanup` (a shell command) once this process is gone, whether it ended normally, crashed,
 * or was killed by the test runner in the middle of an afterAll: a server a test started must
 * never outlive it. A detached `sh` polls for this process once a second.
 */
export function cleanupWhenGone(cleanup: string): void {
  const child = spawn('sh', ['-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${cleanup}`], {
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
}

/** Single-quote a value for `sh`. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Wait for `p` at most `ms`; a close that hangs must not stop the closes after it. */
export async function within(p: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.resolve(p).catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  if (timer) clearTimeout(timer);
}

/** SIGKILL whatever is still running and wait for it (afterAll). */
export async function killAll(procs: CliProcess[]): Promise<void> {
  for (const p of procs) p.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
}
