/**
 * The pipeline's processes as a user runs them: `videosite-ingest <command>`, each
 * with its peak RSS read from /proc (VmHWM, sampled until the process exits) and its structured
 * log kept, both on disk and as parsed events for the figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { LogEvent } from '../src/log-events.ts';
import { RSS_SAMPLE_INTERVAL_MS } from './settings.ts';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = 'bin/videosite-ingest.js';

/**
 * The node flags of the command's shebang (`#!/usr/bin/env -S node --flag ...`): the processes
 * run exactly as the installed `videosite-ingest` command runs, with the same node as this one.
 */
export function shebangNodeArgs(): string[] {
  const first = readFileSync(join(REPO_ROOT, BIN), 'utf8').split('\n', 1)[0] ?? '';
  const words = first
    .replace(/^#!\s*/, '')
    .split(/\s+/)
    .filter((w) => w !== '');
  const node = words.findIndex((w) => w === 'node' || w.endsWith('/node'));
  return node === -1 ? [] : words.slice(node + 1);
}

/** One pino line of a child's stderr (the fields the benchmark reads). */
export interface LogLine {
  time: number;
  msg: string;
  level?: number;
  /** the stable event name (src/log-events.ts): what the benchmark matches on, never `msg` */
  event?: LogEvent;
  [field: string]: unknown;
}

export interface ProcResult {
  name: string;
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** spawn to exit, ms */
  wallMs: number;
  /** highest VmHWM seen, MB; 0 when the process ended before the first sample */
  peakRssMb: number;
  /** user + system CPU time as last sampled, s */
  cpuS: number;
  stdout: string;
  logPath: string;
  /** error-level log lines (pino level >= 50), for the report */
  errors: string[];
}

/** User + system CPU time of a live process, s (from /proc/<pid>/stat); undefined once it is gone. */
export function readCpuS(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // fields after the command name (which may hold blanks), from field 3 on
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  } catch {
    return undefined;
  }
}

/** Linux USER_HZ: the unit of the CPU times in /proc/<pid>/stat. */
const CLOCK_TICKS_PER_S = 100;

/** Peak resident set of a live process, kB (VmHWM); undefined once it is gone. */
export function readPeakRssKb(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Processes started and not yet exited, so an interrupted benchmark leaves none behind. */
const running = new Set<CliProcess>();

/** SIGKILL every process this benchmark started that is still running. */
export function killRunning(): void {
  for (const p of running) p.kill();
}

export class CliProcess {
  readonly name: string;
  readonly events: LogLine[] = [];
  readonly done: Promise<ProcResult>;
  private readonly child: ChildProcess;
  private readonly log: WriteStream;
  private readonly startedAt = Date.now();
  private peakKb = 0;
  private cpuS = 0;
  private listeners: ((e: LogLine) => void)[] = [];

  private constructor(name: string, args: string[], env: Record<string, string>, logDir: string, nodeArgs: string[]) {
    this.name = name;
    const logPath = join(logDir, `${name}.log`);
    this.log = createWriteStream(logPath);
    this.child = spawn(process.execPath, [...shebangNodeArgs(), ...nodeArgs, BIN, ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pid = this.child.pid ?? -1;
    running.add(this);
    const sample = () => {
      const kb = readPeakRssKb(pid);
      if (kb !== undefined && kb > this.peakKb) this.peakKb = kb;
      const cpu = readCpuS(pid);
      if (cpu !== undefined) this.cpuS = cpu;
    };
    const timer = setInterval(sample, RSS_SAMPLE_INTERVAL_MS);
    sample();

    let stdout = '';
    const errors: string[] = [];
    this.child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      this.log.write(d);
    });
    const lines = createInterface({ input: this.child.stderr! });
    lines.on('line', (line) => {
      this.log.write(`${line}\n`);
      if (!line.startsWith('{')) return;
      let e: LogLine;
      try {
        e = JSON.parse(line) as LogLine;
      } catch {
        return;
      }
      if (typeof e.time !== 'number' || typeof e.msg !== 'string') return;
      this.events.push(e);
      if ((e.level ?? 0) >= 50)
        errors.push(
          `${e.msg}${typeof e.err === 'object' && e.err ? `: ${(e.err as { message?: string }).message ?? ''}` : ''}`,
        );
      for (const l of this.listeners) l(e);
    });
    const closed = new Promise<void>((resolve) => lines.once('close', () => resolve()));

    this.done = new Promise<ProcResult>((resolve, reject) => {
      this.child.once('error', (err) => {
        clearInterval(timer);
        running.delete(this);
        reject(err);
      });
      this.child.once('exit', (code, signal) => {
        clearInterval(timer);
        running.delete(this);
        const wallMs = Date.now() - this.startedAt;
        void closed.then(() => {
          this.log.end();
          resolve({
            name,
            pid,
            code,
            signal,
            wallMs,
            peakRssMb: this.peakKb / 1024,
            cpuS: this.cpuS,
            stdout,
            logPath,
            errors,
          });
        });
      });
    });
  }

  /** `nodeArgs`: flags for node itself (e.g. `--cpu-prof`), before the script */
  static start(
    name: string,
    args: string[],
    env: Record<string, string>,
    logDir: string,
    nodeArgs: string[] = [],
  ): CliProcess {
    return new CliProcess(name, args, env, logDir, nodeArgs);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Resolve with the first log event (past or future) that matches, or fail after `timeoutMs`. */
  waitForLog(match: (e: LogLine) => boolean, timeoutMs: number): Promise<LogLine> {
    const seen = this.events.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners = this.listeners.filter((l) => l !== listener);
        reject(new Error(`${this.name}: no matching log line within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (e: LogLine) => {
        if (!match(e)) return;
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== listener);
        resolve(e);
      };
      this.listeners.push(listener);
      void this.done.then(
        () => {
          clearTimeout(timer);
          reject(new Error(`${this.name} exited before the expected log line`));
        },
        () => {},
      );
    });
  }

  /** SIGTERM (a graceful shutdown), then SIGKILL if it is still running after `graceMs`. */
  async stop(graceMs = 30_000): Promise<ProcResult> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.done;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kill without grace (the benchmark is failing anyway). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
