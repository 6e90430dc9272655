/**
 * The container image builds (issue #10, point 8), proven without a Docker engine.
 *
 * The Dockerfile is parsed and "built" on this machine: every build stage gets a temporary
 * folder standing for the image's filesystem root; each COPY copies into it only what Docker
 * would copy (the build context minus `.dockerignore`, or another stage's files for
 * `COPY --from`), and fails as Docker fails when a source is missing or ignored; each RUN runs
 * there with `sh -c`, in the stage's WORKDIR, with the stage's ENV and ARGs. Then the last
 * stage's ENTRYPOINT runs as `docker run IMAGE --help` would run it (help lists the commands),
 * with the first word of its CMD (the default command exists and knows the CMD's options), and
 * with `migrate` against a throwaway database (the migrations ship in the image).
 *
 * What it does not simulate: the base image (this machine's node and npm stand in for it, so the
 * Node major of `FROM node:<N>` should be the host's; a mismatch is reported as a warning), users
 * and file ownership (USER only moves HOME; every step runs as the current user), EXPOSE (only
 * checked for syntax), and RUN steps that name absolute paths (refused: they would act on this
 * machine, not on the image). An instruction, flag or form the simulator does not understand
 * fails the test with a message saying so, never silently.
 *
 * DOCKERFILE_UNDER_TEST=<path> builds another Dockerfile with the same context (the checkout),
 * e.g. `git show HEAD:Dockerfile > /tmp/Dockerfile.old`; KEEP_DOCKERFILE_BUILD=1 keeps the
 * temporary folder for a look after the run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { setPriority, tmpdir } from 'node:os';
import { join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../src/admin/auth.ts';
import { dropDatabase, testDatabaseName, testServerUrl } from '../helpers/db.ts';

const CONTEXT = fileURLToPath(new URL('../..', import.meta.url));
const DOCKERFILE = process.env.DOCKERFILE_UNDER_TEST
  ? resolve(process.env.DOCKERFILE_UNDER_TEST)
  : join(CONTEXT, 'Dockerfile');
/** two `npm ci` from the registry and a type-check, on a 2-core machine among other test files */
const BUILD_TIMEOUT_MS = 600_000;
/** one command of the built image (its compiled JavaScript starts in well under a second; generous for a busy machine) */
const RUN_TIMEOUT_MS = 90_000;

// ------------------------------------------------------------------------------------------
// Parsing
// ------------------------------------------------------------------------------------------

const SUPPORTED = ['FROM', 'WORKDIR', 'COPY', 'RUN', 'ENV', 'ARG', 'USER', 'EXPOSE', 'ENTRYPOINT', 'CMD'] as const;
type Keyword = (typeof SUPPORTED)[number];

interface Instruction {
  /** line of the Dockerfile where the instruction starts (1-based) */
  line: number;
  keyword: Keyword;
  /** everything after the keyword, continuation lines joined, comment lines dropped */
  args: string;
}

/** Splits a Dockerfile into instructions; throws on anything this simulator does not understand. */
export function parseDockerfile(text: string): Instruction[] {
  const lines = text.split(/\r?\n/);
  const out: Instruction[] = [];
  let i = 0;
  // parser directives: `# name=value` lines before anything else
  for (; i < lines.length; i++) {
    const m = /^#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$/.exec(lines[i]!);
    if (!m) break;
    if (m[1]!.toLowerCase() === 'escape' && m[2] !== '\\') {
      throw new Error(`Dockerfile line ${i + 1}: escape=${m[2]} is not supported by this test`);
    }
  }
  for (; i < lines.length; i++) {
    const first = lines[i]!;
    if (/^\s*(#|$)/.test(first)) continue;
    const start = i + 1;
    let text = first;
    // a line ending in a backslash continues on the next one; comment and empty lines inside a
    // continued instruction are dropped, as Docker does
    while (/\\[ \t]*$/.test(text)) {
      text = text.replace(/\\[ \t]*$/, '');
      i++;
      while (i < lines.length && /^\s*(#|$)/.test(lines[i]!)) i++;
      if (i >= lines.length) break;
      text += lines[i]!;
    }
    const m = /^\s*(\S+)\s*([\s\S]*)$/.exec(text)!;
    const keyword = m[1]!.toUpperCase();
    if (!(SUPPORTED as readonly string[]).includes(keyword)) {
      throw new Error(
        `Dockerfile line ${start}: instruction ${keyword} is not supported by this test ` +
          `(it understands ${SUPPORTED.join(', ')}); teach test/integration/dockerfile.test.ts about it`,
      );
    }
    const args = m[2]!.trim();
    if ((keyword === 'RUN' || keyword === 'COPY') && /(^|\s)<<-?\s*["']?[A-Za-z_]/.test(args)) {
      throw new Error(`Dockerfile line ${start}: heredocs (${keyword} <<EOF) are not supported by this test`);
    }
    out.push({ line: start, keyword: keyword as Keyword, args });
  }
  return out;
}

/** The exec form (`["a", "b"]`) of RUN/CMD/ENTRYPOINT/COPY, or undefined for the shell form. */
function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  try {
    const v: unknown = JSON.parse(args);
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  } catch {
    // not JSON: Docker takes it as the shell form
  }
  return undefined;
}

/**
 * Splits `s` into words as Docker does for COPY/ENV/ARG/WORKDIR/USER/EXPOSE/FROM: whitespace
 * separates, quotes group and are removed, a backslash escapes, and `$VAR`, `${VAR}`,
 * `${VAR:-word}`, `${VAR:+word}` are replaced (not inside single quotes).
 */
export function words(s: string, vars: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else cur += c;
      continue;
    }
    if (c === '\\' && i + 1 < s.length) {
      cur += s[++i];
      inWord = true;
    } else if (c === '"' && quote === '"') {
      quote = undefined;
    } else if ((c === '"' || c === "'") && quote === undefined) {
      quote = c;
      inWord = true;
    } else if (c === '$') {
      const [value, next] = expandAt(s, i, vars);
      cur += value;
      i = next - 1;
      inWord = true;
    } else if (/\s/.test(c) && quote === undefined) {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (quote !== undefined) throw new Error(`unterminated quote in: ${s}`);
  if (inWord) out.push(cur);
  return out;
}

/** The value of the variable reference at `s[i]` (a `$`) and the index after it. */
function expandAt(s: string, i: number, vars: ReadonlyMap<string, string>): [string, number] {
  const simple = /^\$([A-Za-z_][A-Za-z0-9_]*)/.exec(s.slice(i));
  if (simple) return [vars.get(simple[1]!) ?? '', i + simple[0].length];
  const braced = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}/.exec(s.slice(i));
  if (!braced) return ['$', i + 1];
  const value = vars.get(braced[1]!);
  const word = braced[3] ?? '';
  if (braced[2] === '-') return [value ? value : expandAll(word, vars), i + braced[0].length];
  if (braced[2] === '+') return [value ? expandAll(word, vars) : '', i + braced[0].length];
  return [value ?? '', i + braced[0].length];
}

function expandAll(s: string, vars: ReadonlyMap<string, string>): string {
  let out = '';
  for (let i = 0; i < s.length;) {
    if (s[i] === '$') {
      const [v, next] = expandAt(s, i, vars);
      out += v;
      i = next;
    } else out += s[i++];
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// .dockerignore
// ------------------------------------------------------------------------------------------

interface IgnoreRule {
  negate: boolean;
  re: RegExp;
  pattern: string;
}

/** Docker's .dockerignore: Go filepath.Match patterns plus `**`, `!` exceptions, last match wins. */
export function parseDockerignore(text: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let p = raw.trim();
    if (p === '' || p.startsWith('#')) continue;
    const negate = p.startsWith('!');
    if (negate) p = p.slice(1).trim();
    p = posix.normalize(p).replace(/^\/+/, '').replace(/\/+$/, '');
    if (p === '' || p === '.') continue;
    rules.push({ negate, re: patternToRegExp(p), pattern: raw.trim() });
  }
  return rules;
}

function patternToRegExp(p: string): RegExp {
  let re = '^';
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '*') {
      if (p[i + 1] === '*') {
        i++;
        if (i + 1 === p.length) re += '.*';
        else if (p[i + 1] === '/') {
          i++;
          re += '(?:.*/)?';
        } else re += '.*';
      } else re += '[^/]*';
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '[') {
      const end = p.indexOf(']', i + 1);
      if (end < 0) throw new Error(`.dockerignore: unterminated [ in ${p}`);
      let cls = p.slice(i + 1, end).replace(/\\/g, '\\\\');
      if (cls.startsWith('^') || cls.startsWith('!')) cls = `^${cls.slice(1)}`;
      re += `[${cls}]`;
      i = end;
    } else if (c === '\\' && i + 1 < p.length) {
      re += p[++i]!.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    } else {
      re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  return new RegExp(`${re}$`);
}

/** Whether a context-relative path (`/`-separated) is left out of the build context. */
export function isIgnored(rules: readonly IgnoreRule[], path: string): boolean {
  const parts = path.split('/');
  const candidates = parts.map((_, k) => parts.slice(0, k + 1).join('/'));
  let ignored = false;
  for (const rule of rules) {
    // a pattern that matches a parent directory matches everything under it
    if (candidates.some((c) => rule.re.test(c))) ignored = !rule.negate;
  }
  return ignored;
}

// ------------------------------------------------------------------------------------------
// Building
// ------------------------------------------------------------------------------------------

type Command = { exec: string[] } | { shell: string };

interface Stage {
  index: number;
  name?: string;
  /** the image, or the earlier stage, named by FROM */
  base: string;
  /** the folder standing for this stage's `/` */
  root: string;
  workdir: string;
  user: string;
  env: Map<string, string>;
  args: Map<string, string>;
  entrypoint?: Command;
  cmd?: Command;
}

interface StepTiming {
  what: string;
  ms: number;
}

export interface Build {
  dir: string;
  stages: Stage[];
  final: Stage;
  timings: StepTiming[];
}

/** Docker's predefined ARGs: the build sees the host's proxies without an ARG line. */
const PROXY_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'FTP_PROXY', 'NO_PROXY', 'ALL_PROXY'].flatMap((v) => [
  v,
  v.toLowerCase(),
]);
/**
 * This machine's network setup, not part of the image: its CA bundle (a TLS-inspecting proxy)
 * and a registry mirror, so `npm ci` reaches the registry here as the build host would.
 */
const HOST_NETWORK_VARS = [
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'npm_config_registry',
  'NPM_CONFIG_REGISTRY',
];

const live = new Set<ChildProcess>();

function hostPath(stage: Stage, imagePath: string): string {
  return join(stage.root, ...posix.resolve('/', imagePath).split('/').filter(Boolean));
}

function homeOf(stage: Stage): string {
  const user = stage.user.split(':')[0]!;
  return user === 'root' || user === '0' ? '/root' : `/home/${user}`;
}

/**
 * The environment of a RUN step or of the container: the image's ENV (plus ARGs during the
 * build), with this machine's PATH standing for the base image's (node and npm come from here)
 * and HOME and TMPDIR inside the stage folder (so `npm cache clean` never touches this machine's
 * cache, and tsx's cache goes away with the build). Nothing else is inherited: no npm_config_*
 * of the `npm test` that started vitest.
 */
function environment(stage: Stage, building: boolean): NodeJS.ProcessEnv {
  const home = hostPath(stage, homeOf(stage));
  const tmp = hostPath(stage, '/tmp');
  mkdirSync(home, { recursive: true });
  mkdirSync(tmp, { recursive: true });
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmp };
  for (const v of [...(building ? PROXY_VARS : []), ...HOST_NETWORK_VARS]) {
    if (process.env[v] !== undefined) env[v] = process.env[v];
  }
  if (building) for (const [k, v] of stage.args) env[k] = v;
  for (const [k, v] of stage.env) {
    if (k === 'HOME' || k === 'PATH' || k === 'TMPDIR') {
      throw new Error(`ENV ${k} is not supported by this test (it maps ${k} to this machine)`);
    }
    env[k] = v;
  }
  return env;
}

/** Variables Docker substitutes in an instruction: the stage's ARGs, then its ENV over them. */
function vars(stage: Stage): Map<string, string> {
  return new Map([...stage.args, ...stage.env]);
}

function sameRoot(a: string, b: string): boolean {
  const r = relative(a, b);
  return r === '' || (!r.startsWith('..') && !r.startsWith(sep) && r !== '..');
}

/** Refuses a RUN step that names an absolute path: it would act on this machine's `/`. */
function refuseAbsolutePaths(line: number, argv: string[]): void {
  for (const a of argv) {
    const m = /(?:^|[\s=('"`;&|])(\/[^\s'"`;&|)]*)/.exec(a);
    if (m) {
      throw new Error(
        `Dockerfile line ${line}: RUN names the absolute path ${m[1]}; this test runs RUN steps on ` +
          'this machine (not in a container), so it cannot run them safely',
      );
    }
  }
}

interface Proc {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs argv (no shell) and collects its output; the child is killed (whole group) at `timeoutMs`.
 * `background` lowers its CPU priority, which changes nothing but timing: the build's npm ci and
 * tsc then yield a 2-core machine to the other test files running beside this one.
 */
function run(
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  background = false,
): Promise<Proc> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    live.add(child);
    if (background && child.pid !== undefined) {
      try {
        setPriority(child.pid, 10);
      } catch {
        // not allowed here: run at normal priority
      }
    }
    let stdout = '';
    let stderr = '';
    const keep = (s: string) => (s.length > 200_000 ? s.slice(-200_000) : s);
    child.stdout!.on('data', (d: Buffer) => (stdout = keep(stdout + d.toString())));
    child.stderr!.on('data', (d: Buffer) => (stderr = keep(stderr + d.toString())));
    const timer = setTimeout(() => killGroup(child), timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      live.delete(child);
      reject(new Error(`cannot start ${argv.join(' ')}: ${e.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

function tail(s: string, n = 4000): string {
  return s.length > n ? `...${s.slice(-n)}` : s;
}

/** Copies what one COPY instruction copies. */
function copy(ins: Instruction, stage: Stage, stages: Stage[], ignore: readonly IgnoreRule[]): void {
  const v = vars(stage);
  const list = execForm(ins.args)?.map((w) => expandAll(w, v)) ?? words(ins.args, v);
  let from: Stage | undefined;
  while (list[0]?.startsWith('--')) {
    const flag = list.shift()!;
    const [name, value] = flag.split(/=(.*)/s) as [string, string | undefined];
    if (name === '--from') {
      from = stages.find((s) => s.name === value?.toLowerCase() || String(s.index) === value);
      if (!from) {
        throw new Error(
          `Dockerfile line ${ins.line}: COPY --from=${value}: only earlier build stages are supported, not images`,
        );
      }
    } else if (name !== '--chown' && name !== '--chmod' && name !== '--link') {
      // --chown/--chmod/--link change ownership, modes and caching, which this test does not model
      throw new Error(`Dockerfile line ${ins.line}: COPY ${name} is not supported by this test`);
    }
  }
  if (list.length < 2) throw new Error(`Dockerfile line ${ins.line}: COPY needs a source and a destination`);
  const sources = list.slice(0, -1);
  const destRaw = list[list.length - 1]!;
  const dest = posix.resolve(stage.workdir, destRaw);
  const destIsDir = destRaw.endsWith('/') || destRaw === '.' || destRaw.endsWith('/.');
  if (sources.length > 1 && !destIsDir) {
    throw new Error(`Dockerfile line ${ins.line}: COPY with more than one source needs a destination ending in /`);
  }
  for (const src of sources) {
    if (/[*?[]/.test(src))
      throw new Error(`Dockerfile line ${ins.line}: COPY wildcards (${src}) are not supported by this test`);
    let srcHost: string;
    let filter: ((p: string) => boolean) | undefined;
    if (from) {
      srcHost = hostPath(from, src);
    } else {
      const rel = posix.normalize(`/${src}`).slice(1).replace(/\/+$/, '');
      srcHost = rel === '' ? CONTEXT : join(CONTEXT, ...rel.split('/'));
      if (rel !== '' && isIgnored(ignore, rel)) {
        throw new Error(`Dockerfile line ${ins.line}: COPY ${src}: not found (excluded by .dockerignore)`);
      }
      const descend = ignore.some((r) => r.negate);
      filter = (p: string) => {
        const r = relative(CONTEXT, p).split(sep).join('/');
        if (r === '' || !isIgnored(ignore, r)) return true;
        // an ignored folder may still hold an exception (`!pattern`): look inside it
        return descend && statSync(p).isDirectory();
      };
    }
    if (!existsSync(srcHost)) {
      throw new Error(
        `Dockerfile line ${ins.line}: COPY ${from ? `--from=${from.name ?? from.index} ` : ''}${src}: not found`,
      );
    }
    if (!from && !sameRoot(CONTEXT, srcHost))
      throw new Error(`Dockerfile line ${ins.line}: COPY ${src} leaves the build context`);
    const target = hostPath(stage, dest);
    if (statSync(srcHost).isDirectory()) {
      // a folder's contents are copied into the destination, not the folder itself
      mkdirSync(target, { recursive: true });
      cpSync(srcHost, target, { recursive: true, verbatimSymlinks: true, force: true, ...(filter ? { filter } : {}) });
    } else {
      const intoDir = destIsDir || (existsSync(target) && statSync(target).isDirectory());
      const file = intoDir ? join(target, posix.basename(src)) : target;
      mkdirSync(intoDir ? target : join(file, '..'), { recursive: true });
      copyFileSync(srcHost, file);
    }
  }
}

/**
 * Builds every stage of `dockerfile` in order (as the classic builder does), each in a folder of
 * `dir`; `onStep` hears of each instruction before it runs.
 */
export async function buildImage(dockerfile: string, dir: string, onStep?: (what: string) => void): Promise<Build> {
  const instructions = parseDockerfile(readFileSync(dockerfile, 'utf8'));
  const ignoreFile = join(CONTEXT, '.dockerignore');
  const ignore = existsSync(ignoreFile) ? parseDockerignore(readFileSync(ignoreFile, 'utf8')) : [];
  const build: Build = { dir, stages: [], final: undefined as unknown as Stage, timings: [] };
  const globalArgs = new Map<string, string>();
  let stage: Stage | undefined;

  for (const ins of instructions) {
    const t0 = Date.now();
    const what = `line ${ins.line}: ${ins.keyword} ${ins.args}`;
    onStep?.(what);
    if (ins.keyword === 'FROM') {
      const w = words(ins.args, globalArgs).filter((x) => !x.startsWith('--platform'));
      if (!(w.length === 1 || (w.length === 3 && w[1]!.toUpperCase() === 'AS'))) {
        throw new Error(`Dockerfile line ${ins.line}: cannot read FROM ${ins.args}`);
      }
      const base = w[0]!;
      const parent = build.stages.find((s) => s.name === base.toLowerCase());
      const index = build.stages.length;
      const root = join(dir, `stage-${index}${w[2] ? `-${w[2].toLowerCase()}` : ''}`);
      mkdirSync(root, { recursive: true });
      if (parent) cpSync(parent.root, root, { recursive: true, verbatimSymlinks: true });
      else {
        const major = /^node:(\d+)/.exec(base)?.[1];
        const host = process.versions.node.split('.')[0];
        if (major !== undefined && major !== host) {
          console.warn(
            `dockerfile test: FROM ${base} but this machine runs Node ${process.versions.node}; the result may differ`,
          );
        }
      }
      stage = {
        index,
        ...(w[2] ? { name: w[2].toLowerCase() } : {}),
        base,
        root,
        workdir: parent?.workdir ?? '/',
        user: parent?.user ?? 'root',
        env: new Map(parent?.env ?? []),
        args: new Map(),
        ...(parent?.entrypoint ? { entrypoint: parent.entrypoint } : {}),
        ...(parent?.cmd ? { cmd: parent.cmd } : {}),
      };
      build.stages.push(stage);
      continue;
    }
    if (ins.keyword === 'ARG') {
      const target = stage ? stage.args : globalArgs;
      for (const w of words(ins.args, stage ? vars(stage) : globalArgs)) {
        const [name, value] = w.split(/=(.*)/s) as [string, string | undefined];
        // no --build-arg here: an ARG has its default, or inside a stage the global ARG's value
        const v = value ?? (stage ? globalArgs.get(name) : undefined);
        if (v !== undefined) target.set(name, v);
      }
      continue;
    }
    if (!stage) throw new Error(`Dockerfile line ${ins.line}: ${ins.keyword} before the first FROM`);

    switch (ins.keyword) {
      case 'WORKDIR': {
        const w = words(ins.args, vars(stage));
        if (w.length !== 1) throw new Error(`Dockerfile line ${ins.line}: cannot read WORKDIR ${ins.args}`);
        stage.workdir = posix.resolve(stage.workdir, w[0]!);
        mkdirSync(hostPath(stage, stage.workdir), { recursive: true });
        break;
      }
      case 'ENV': {
        const w = words(ins.args, vars(stage));
        if (w[0]?.includes('=')) {
          for (const pair of w) {
            const [k, value] = pair.split(/=(.*)/s) as [string, string | undefined];
            if (value === undefined) throw new Error(`Dockerfile line ${ins.line}: ENV ${pair} has no value`);
            stage.env.set(k, value);
          }
        } else {
          // the old form: ENV KEY value with spaces
          const m = /^(\S+)\s+([\s\S]*)$/.exec(ins.args);
          if (!m) throw new Error(`Dockerfile line ${ins.line}: cannot read ENV ${ins.args}`);
          stage.env.set(m[1]!, words(m[2]!, vars(stage)).join(' '));
        }
        break;
      }
      case 'USER': {
        const w = words(ins.args, vars(stage));
        if (w.length !== 1) throw new Error(`Dockerfile line ${ins.line}: cannot read USER ${ins.args}`);
        stage.user = w[0]!;
        break;
      }
      case 'EXPOSE': {
        for (const p of words(ins.args, vars(stage))) {
          if (!/^\d+(-\d+)?(\/(tcp|udp|sctp))?$/i.test(p))
            throw new Error(`Dockerfile line ${ins.line}: EXPOSE ${p} is not a port`);
        }
        break;
      }
      case 'ENTRYPOINT':
      case 'CMD': {
        const exec = execForm(ins.args);
        const c: Command = exec ? { exec } : { shell: ins.args };
        if (ins.keyword === 'ENTRYPOINT') stage.entrypoint = c;
        else stage.cmd = c;
        break;
      }
      case 'COPY':
        copy(ins, stage, build.stages, ignore);
        break;
      case 'RUN': {
        if (/^--/.test(ins.args))
          throw new Error(
            `Dockerfile line ${ins.line}: RUN flags (${ins.args.split(/\s/)[0]}) are not supported by this test`,
          );
        const exec = execForm(ins.args);
        const argv = exec ?? ['sh', '-c', ins.args];
        refuseAbsolutePaths(ins.line, exec ?? [ins.args]);
        const cwd = hostPath(stage, stage.workdir);
        mkdirSync(cwd, { recursive: true });
        const r = await run(argv, cwd, environment(stage, true), BUILD_TIMEOUT_MS, true);
        if (r.code !== 0) {
          throw new Error(
            `the image does not build: Dockerfile line ${ins.line} (RUN ${ins.args}) exited with ` +
              `${r.code ?? r.signal}\n--- stdout (end) ---\n${tail(r.stdout)}\n--- stderr (end) ---\n${tail(r.stderr)}`,
          );
        }
        break;
      }
      default:
        throw new Error(`Dockerfile line ${ins.line}: ${String(ins.keyword)} not handled`);
    }
    build.timings.push({ what, ms: Date.now() - t0 });
  }
  if (!stage) throw new Error('the Dockerfile has no FROM');
  build.final = stage;
  return build;
}

/** `docker run IMAGE <args>`: the ENTRYPOINT (exec form) with `args` in place of the CMD. */
function runImage(build: Build, args: string[], extraEnv: Record<string, string> = {}): Promise<Proc> {
  const stage = build.final;
  const ep = stage.entrypoint;
  if (!ep) throw new Error('the image has no ENTRYPOINT: `docker run IMAGE --help` would run `--help` as a program');
  if (!('exec' in ep)) throw new Error('a shell-form ENTRYPOINT ignores the arguments of `docker run IMAGE ...`');
  const argv = [...ep.exec, ...args];
  if (argv[0]!.startsWith('/'))
    throw new Error(`ENTRYPOINT ${argv[0]}: absolute paths of the base image are not simulated`);
  return run(argv, hostPath(stage, stage.workdir), { ...environment(stage, false), ...extraEnv }, RUN_TIMEOUT_MS);
}

function show(p: Proc): string {
  return `exit ${p.code ?? p.signal}\n--- stdout ---\n${tail(p.stdout)}\n--- stderr ---\n${tail(p.stderr)}`;
}

// ------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------

describe('the Dockerfile simulator itself', () => {
  it('joins continuation lines, drops comments inside them, reads both forms', () => {
    const ins = parseDockerfile(
      [
        '# syntax=docker/dockerfile:1',
        'FROM node:20 AS a',
        'RUN echo a \\',
        '  # note',
        '  && echo b',
        'CMD ["x", "y"]',
        '',
      ].join('\n'),
    );
    expect(ins.map((i) => [i.line, i.keyword, i.args])).toEqual([
      [2, 'FROM', 'node:20 AS a'],
      [3, 'RUN', 'echo a   && echo b'],
      [6, 'CMD', '["x", "y"]'],
    ]);
    expect(execForm(ins[2]!.args)).toEqual(['x', 'y']);
    expect(execForm('echo [x]')).toBeUndefined();
  });

  it('fails clearly on an instruction it does not understand', () => {
    expect(() => parseDockerfile('FROM node:20\nHEALTHCHECK CMD true\n')).toThrow(
      /line 2: instruction HEALTHCHECK is not supported/,
    );
    expect(() => parseDockerfile('FROM node:20\nRUN <<EOF\necho\nEOF\n')).toThrow(/heredocs/);
  });

  it('splits words with quotes and variables as Docker does', () => {
    const v = new Map([
      ['A', 'x y'],
      ['B', ''],
    ]);
    expect(words(`K="$A" L='$A' M=\${B:-d} N=\${A:+set} O=\\$A`, v)).toEqual(['K=x y', 'L=$A', 'M=d', 'N=set', 'O=$A']);
  });

  it('matches .dockerignore patterns as Docker does', () => {
    const rules = parseDockerignore('node_modules/\n*.log\n/bench\ndocs/**/*.md\n!docs/keep.md\n# c\n');
    expect(isIgnored(rules, 'node_modules')).toBe(true);
    expect(isIgnored(rules, 'node_modules/pkg/index.js')).toBe(true);
    expect(isIgnored(rules, 'a.log')).toBe(true);
    expect(isIgnored(rules, 'src/a.log')).toBe(false); // no implicit **/ in .dockerignore
    expect(isIgnored(rules, 'bench/run.ts')).toBe(true);
    expect(isIgnored(rules, 'docs/x/y.md')).toBe(true);
    expect(isIgnored(rules, 'docs/y.md')).toBe(true);
    expect(isIgnored(rules, 'docs/keep.md')).toBe(false);
    expect(isIgnored(rules, 'src/index.ts')).toBe(false);
  });
});

/** The value of `--flag v` or `--flag=v` in `args`, if given. */
function optionValue(args: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === flag) return args[i + 1];
    if (args[i]!.startsWith(`${flag}=`)) return args[i]!.slice(flag.length + 1);
  }
  return undefined;
}

describe('the container defaults are safe (issue #27)', () => {
  it("the image's default command keeps the admin server on the container's loopback, and the image carries no token", () => {
    const ins = parseDockerfile(readFileSync(DOCKERFILE, 'utf8'));
    const last = ins.map((i) => i.keyword).lastIndexOf('FROM');
    const final = ins.slice(last);
    const cmd = final.filter((i) => i.keyword === 'CMD').at(-1);
    expect(cmd, 'a CMD in the last stage').toBeDefined();
    const args = execForm(cmd!.args);
    expect(args, 'CMD in exec form').toBeDefined();
    const host = optionValue(args!, '--admin-host');
    // every interface only when told: `docker run ... daemon --admin-host 0.0.0.0` with ADMIN_TOKEN
    if (host !== undefined) expect(isLoopbackHost(host), `CMD --admin-host ${host}`).toBe(true);
    for (const i of ins.filter((x) => x.keyword === 'ENV' || x.keyword === 'ARG')) {
      expect(i.args, `line ${i.line}`).not.toMatch(/\b(ADMIN_TOKEN|METRICS_TOKEN)\b/);
    }
  });

  it('docker-compose.yml has no usable default token, publishes on the host loopback only, and binds every interface only with a token', () => {
    const compose = readFileSync(join(CONTEXT, 'docker-compose.yml'), 'utf8');
    const lines = compose.split('\n').filter((l) => !/^\s*#/.test(l));
    // a token comes from the environment of `docker compose` only: no literal, no `:-default`
    const tokens = lines.filter((l) => /\b(ADMIN_TOKEN|METRICS_TOKEN)\s*[:=]/.test(l));
    expect(tokens.length, 'the daemon is given ADMIN_TOKEN').toBeGreaterThan(0);
    for (const l of tokens) {
      const value = l
        .replace(/^\s*-?\s*(ADMIN_TOKEN|METRICS_TOKEN)\s*[:=]\s*/, '')
        .trim()
        .replace(/^["']|["']$/g, '');
      expect(value, l).toMatch(/^\$\{(ADMIN_TOKEN|METRICS_TOKEN)(:?\?[^}]*|:-)?\}$/);
    }
    // published ports: the host's loopback only
    const published = [...compose.matchAll(/^\s*-\s*["']?([^"'\n]*:\d+(?::\d+)?)["']?\s*$/gm)]
      .map((m) => m[1]!)
      .filter((p) => /^[\d.]*:?\d+:\d+$/.test(p));
    expect(published.length).toBeGreaterThan(0);
    for (const p of published) expect(p, 'a published port').toMatch(/^127\.0\.0\.1:/);
    // a service told to listen beyond loopback is given the token
    const services = compose.split(/^ {2}(?=[a-z][\w-]*:\s*$)/m).slice(1);
    for (const service of services) {
      const command = /command:\s*(\[.*\])/.exec(service)?.[1];
      const host = command === undefined ? undefined : optionValue(JSON.parse(command) as string[], '--admin-host');
      if (host !== undefined && !isLoopbackHost(host))
        expect(service, `${service.split(':')[0]} listens on ${host}`).toMatch(/ADMIN_TOKEN:/);
    }
  });
});

const LABEL = sameRoot(CONTEXT, DOCKERFILE) ? relative(CONTEXT, DOCKERFILE) : DOCKERFILE;

describe(`the container image (${LABEL}) builds and runs`, () => {
  let build: Build | undefined;
  /** the build's folder, made by the first test (a filtered run that skips it leaves nothing) */
  let dir: string | undefined;
  const databases: string[] = [];

  afterAll(async () => {
    const t0 = Date.now();
    for (const c of live) killGroup(c);
    for (const name of databases) await dropDatabase(name);
    if (dir === undefined) return;
    if (process.env.KEEP_DOCKERFILE_BUILD === '1') console.log(`dockerfile test: build kept in ${dir}`);
    // ~450 MB in ~20k files (two node_modules, an npm cache): this can take a minute on a busy disk
    else await rm(dir, { recursive: true, force: true, maxRetries: 3 });
    console.log(`dockerfile test: cleaned up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }, BUILD_TIMEOUT_MS);

  it(
    'every COPY source exists and every RUN step succeeds, in order',
    async () => {
      const t0 = Date.now();
      let current = '';
      dir = mkdtempSync(join(tmpdir(), 'vsi-dockerfile-'));
      try {
        build = await buildImage(DOCKERFILE, dir, (what) => (current = what));
      } catch (e) {
        throw new Error(`${(e as Error).message}\n(at ${current})`, { cause: e });
      }
      const slow = build.timings.filter((t) => t.ms > 1000).map((t) => `${(t.ms / 1000).toFixed(1)} s  ${t.what}`);
      console.log(`dockerfile test: built in ${((Date.now() - t0) / 1000).toFixed(1)} s\n${slow.join('\n')}`);
      expect(build.stages.length).toBeGreaterThan(0);
    },
    BUILD_TIMEOUT_MS,
  );

  it(
    '`docker run IMAGE --help` lists the commands',
    async () => {
      expect(build, 'the image did not build (see the test above)').toBeDefined();
      const r = await runImage(build!, ['--help']);
      expect(r.code, show(r)).toBe(0);
      for (const command of ['migrate', 'sources', 'daemon', 'backfill', 'replay', 'status', 'simulator']) {
        expect(r.stdout, show(r)).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
      }
    },
    RUN_TIMEOUT_MS + 30_000,
  );

  it(
    "the default CMD's command exists and knows every option the CMD passes",
    async () => {
      expect(build, 'the image did not build (see the test above)').toBeDefined();
      const cmd = build!.final.cmd;
      expect(cmd && 'exec' in cmd, 'CMD in exec form').toBe(true);
      const args = (cmd as { exec: string[] }).exec;
      const r = await runImage(build!, [args[0]!, '--help']);
      expect(r.code, show(r)).toBe(0);
      for (const flag of args.filter((a) => a.startsWith('--')))
        expect(r.stdout, show(r)).toContain(flag.split('=')[0]);
    },
    RUN_TIMEOUT_MS + 30_000,
  );

  it('the image runs the compiled JavaScript of dist/: no sources, no tsx', () => {
    expect(build, 'the image did not build (see the test above)').toBeDefined();
    const app = (p: string) => hostPath(build!.final, posix.join(build!.final.workdir, p));
    expect(existsSync(app('dist/cli/main.js')), 'dist/cli/main.js in the image').toBe(true);
    // (typescript is there: an optional peer of valibot, under @bull-board/api, which npm ci
    // installs with --omit=dev; nothing loads it)
    for (const absent of ['src', 'node_modules/tsx']) expect(existsSync(app(absent)), absent).toBe(false);
  });

  it("the image's postgres.js carries the postinstall patch (an install with --ignore-scripts skips it)", () => {
    expect(build, 'the image did not build (see the test above)').toBeDefined();
    const pkg = JSON.parse(readFileSync(join(CONTEXT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    // the check goes away with the patch (README: drop it once postgres.js ships the fix)
    if (!pkg.scripts?.postinstall?.includes('scripts/patch-postgres.mjs')) return;
    const file = hostPath(build!.final, posix.join(build!.final.workdir, 'node_modules/postgres/src/connection.js'));
    expect(
      readFileSync(file, 'utf8').includes('patched by videosite-ingest scripts/patch-postgres.mjs'),
      "node_modules/postgres is unpatched: the last stage's npm ci did not run the postinstall script",
    ).toBe(true);
  });

  it(
    '`docker run IMAGE migrate` applies every migration of the checkout (they ship in the image)',
    async () => {
      expect(build, 'the image did not build (see the test above)').toBeDefined();
      const name = testDatabaseName('dockerfile');
      databases.push(name);
      const migrations = readdirSync(join(CONTEXT, 'migrations')).filter((f) => f.endsWith('.sql')).length;
      const r = await runImage(build!, ['migrate'], { DATABASE_URL: testServerUrl(name) });
      expect(r.code, show(r)).toBe(0);
      expect(r.stdout, show(r)).toContain(`${migrations} migration(s) applied`);
    },
    RUN_TIMEOUT_MS + 30_000,
  );
});
