/**
 * A small TCP fault proxy for the fault suite: it sits in front of the upstream, Redis or
 * Postgres and, switchable at runtime, passes traffic, delays it, swallows it (black hole) or
 * resets connections. Faults apply to every connection, or to one chosen by its traffic (a rule
 * that loses the answer to a request matching a pattern, after the request went through).
 *
 *   const p = await startFaultProxy({ target: { host: '127.0.0.1', port: 6379 } });
 *   env.REDIS_URL = `redis://127.0.0.1:${p.port}`;
 *   p.set({ mode: 'blackhole' });   // Redis "unreachable": packets vanish, nothing is refused
 *   p.set({ mode: 'pass' });        // black-holed connections are reset; new ones work again
 *   await p.close();
 *
 * No mocking of our code: the processes under test talk real protocols through a real socket.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export type ProxyMode =
  /** forward everything */
  | 'pass'
  /** forward everything after `latencyMs` (each direction, order kept) */
  | 'latency'
  /** accept connections and data, forward nothing, answer nothing */
  | 'blackhole'
  /** reset every open connection (TCP RST) and every new one */
  | 'reset';

export interface ProxySettings {
  mode: ProxyMode;
  /** delay of each chunk in `latency` mode, real ms; default 0 */
  latencyMs: number;
}

/** Lose the answer to a request: once a client chunk matches, the connection is reset as soon as the answer starts. */
export interface LoseAnswerRule {
  /** matched against each client→target chunk (decoded as latin1) */
  request: RegExp;
  /** how many matching requests lose their answer; default 1 */
  times?: number;
}

/** Swallow a request: once a client chunk matches, nothing more of that connection is forwarded. */
export interface DropRequestRule {
  request: RegExp;
  /** how many matching requests are swallowed; default 1 */
  times?: number;
}

export interface ProxyEvent {
  /** connection number, from 1 */
  conn: number;
  kind: 'open' | 'request' | 'answer-lost' | 'request-dropped' | 'client-closed' | 'reset';
  /** Date.now() */
  at: number;
  /** the first line of a matched request (for `request` events of watched patterns) */
  line?: string;
}

export interface FaultProxy {
  /** the port to connect to (on 127.0.0.1) */
  port: number;
  url(scheme: string, path?: string): string;
  settings(): ProxySettings;
  /** switch faults at runtime; leaving `blackhole` resets the connections it swallowed */
  set(patch: Partial<ProxySettings>): void;
  /** arm a rule that loses the answers of matching requests */
  loseAnswer(rule: LoseAnswerRule): void;
  /** arm a rule that swallows matching requests (they never reach the target) */
  dropRequest(rule: DropRequestRule): void;
  /** record `request` events (with their first line) for client chunks matching this pattern */
  watch(pattern: RegExp): void;
  events(): ProxyEvent[];
  /** open connections right now */
  openConnections(): number;
  /** reset every open connection now, whatever the mode */
  resetAll(): void;
  /**
   * send new connections to another port (a managed Redis's endpoint moved to the new primary);
   * open connections stay with the old target, as a DNS change leaves them
   */
  retarget(port: number): void;
  close(): Promise<void>;
}

interface Conn {
  id: number;
  client: Socket;
  target: Socket | undefined;
  /** the answer to the current request must be lost */
  loseNext: boolean;
  swallowed: boolean;
}

function destroyHard(s: Socket | undefined): void {
  if (!s || s.destroyed) return;
  // an RST, not a FIN: what a crashed peer or a middlebox dropping state looks like
  if (typeof s.resetAndDestroy === 'function' && s.readyState !== 'opening') s.resetAndDestroy();
  else s.destroy();
}

export async function startFaultProxy(opts: {
  target: { host: string; port: number };
  settings?: Partial<ProxySettings>;
}): Promise<FaultProxy> {
  let settings: ProxySettings = { mode: 'pass', latencyMs: 0, ...opts.settings };
  let targetAddr = { ...opts.target };
  const conns = new Set<Conn>();
  const events: ProxyEvent[] = [];
  const rules: { request: RegExp; left: number }[] = [];
  const drops: { request: RegExp; left: number }[] = [];
  const watched: RegExp[] = [];
  let seq = 0;

  const delay = (): number => (settings.mode === 'latency' ? settings.latencyMs : 0);

  /**
   * Forward `src` to `dst` like a wire with latency: each chunk leaves `latencyMs` after it
   * arrived (pipelined, order kept), the reader is paused while the writer is backed up, and an
   * orderly end is passed on only after everything before it was written.
   */
  function forward(src: Socket, dst: () => Socket | undefined, inspect: (chunk: Buffer) => boolean): void {
    let chain = Promise.resolve();
    let pending = 0;
    src.on('data', (chunk: Buffer) => {
      if (!inspect(chunk)) return;
      const due = Date.now() + delay();
      pending++;
      if (pending > 32) src.pause();
      chain = chain.then(async () => {
        const wait = due - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const d = dst();
        if (d && !d.destroyed && d.writable && !d.write(chunk)) {
          await new Promise<void>((resolve) => {
            const done = () => {
              d.off('drain', done);
              d.off('close', done);
              resolve();
            };
            d.on('drain', done);
            d.on('close', done);
          });
        }
        pending--;
        if (pending <= 8 && src.isPaused()) src.resume();
      });
    });
    src.on('end', () => {
      chain = chain.then(() => {
        const d = dst();
        if (d && !d.destroyed) d.end();
      });
    });
  }

  const server: Server = createServer((client) => {
    const c: Conn = { id: ++seq, client, target: undefined, loseNext: false, swallowed: false };
    conns.add(c);
    events.push({ conn: c.id, kind: 'open', at: Date.now() });
    client.on('error', () => undefined);
    client.on('close', () => {
      events.push({ conn: c.id, kind: 'client-closed', at: Date.now() });
      conns.delete(c);
      c.target?.destroy();
    });
    if (settings.mode === 'reset') {
      events.push({ conn: c.id, kind: 'reset', at: Date.now() });
      destroyHard(client);
      return;
    }
    if (settings.mode === 'blackhole') {
      c.swallowed = true;
      client.on('data', () => undefined);
      return;
    }
    const target = createConnection(targetAddr);
    c.target = target;
    target.on('error', () => undefined);
    // an abortive close (reset) is passed on as one; an orderly end goes through forward()
    target.on('close', (hadError) => {
      if (hadError) destroyHard(client);
    });
    forward(
      client,
      () => c.target,
      (chunk) => {
        if (settings.mode === 'blackhole') {
          c.swallowed = true;
          return false;
        }
        const text = chunk.toString('latin1');
        const firstLine = text.split('\r\n', 1)[0] ?? '';
        for (const w of watched) {
          if (w.test(text)) events.push({ conn: c.id, kind: 'request', at: Date.now(), line: firstLine });
        }
        const drop = drops.find((r) => r.left > 0 && r.request.test(text));
        if (drop) {
          drop.left--;
          c.swallowed = true;
          events.push({ conn: c.id, kind: 'request-dropped', at: Date.now(), line: firstLine });
        }
        if (c.swallowed) return false;
        const rule = rules.find((r) => r.left > 0 && r.request.test(text));
        if (rule) {
          rule.left--;
          c.loseNext = true;
        }
        return true;
      },
    );
    forward(
      target,
      () => c.client,
      () => {
        if (settings.mode === 'blackhole' || c.swallowed) {
          c.swallowed = true;
          return false;
        }
        if (c.loseNext) {
          // the request went through and was handled; its answer never arrives
          events.push({ conn: c.id, kind: 'answer-lost', at: Date.now() });
          destroyHard(client);
          target.destroy();
          return false;
        }
        return true;
      },
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('fault proxy: unexpected address');
  const port = addr.port;

  const resetAll = () => {
    for (const c of conns) {
      events.push({ conn: c.id, kind: 'reset', at: Date.now() });
      destroyHard(c.client);
      c.target?.destroy();
    }
  };

  return {
    port,
    url: (scheme, path = '') => `${scheme}://127.0.0.1:${port}${path}`,
    settings: () => ({ ...settings }),
    set(patch) {
      const before = settings.mode;
      settings = { ...settings, ...patch };
      if (settings.mode === 'reset') resetAll();
      if (before === 'blackhole' && settings.mode !== 'blackhole') {
        // whatever they sent into the hole is gone: their protocol state is unknown, end them
        for (const c of conns) {
          if (c.swallowed) {
            destroyHard(c.client);
            c.target?.destroy();
          }
        }
      }
    },
    loseAnswer(rule) {
      rules.push({ request: rule.request, left: rule.times ?? 1 });
    },
    dropRequest(rule) {
      drops.push({ request: rule.request, left: rule.times ?? 1 });
    },
    watch(pattern) {
      watched.push(pattern);
    },
    events: () => [...events],
    openConnections: () => conns.size,
    resetAll,
    retarget(port) {
      targetAddr = { ...targetAddr, port };
    },
    async close() {
      for (const c of conns) {
        c.client.destroy();
        c.target?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
