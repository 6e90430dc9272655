/**
 * Helpers for the admin server tests: authorization headers, raw HTTP requests (any Host, Origin
 * or body, as a browser or an attacker's page would send them), and reading samples out of the
 * Prometheus text format the way a scraper does (name + exact label set).
 */
import { request } from 'node:http';

export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

export const basic = (token: string, user = 'admin'): Record<string, string> => ({
  authorization: `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`,
});

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface RawRequest {
  method?: string;
  path: string;
  /** sent exactly as given; `host` defaults to the server's own `127.0.0.1:port` */
  headers?: Record<string, string>;
  /** sent with a content-length unless `chunked` */
  body?: string | Buffer;
  /** send the body with `transfer-encoding: chunked` (no content-length), in pieces */
  chunked?: boolean;
}

/**
 * One request to `baseUrl` (`http://127.0.0.1:port`) with the headers exactly as given: fetch
 * would set Host and Origin itself, a page of another site cannot choose them either, so the
 * tests that play that page need this.
 */
export function rawRequest(baseUrl: string, r: RawRequest): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  const headers: Record<string, string> = { host: url.host, ...r.headers };
  const body = r.body === undefined ? undefined : Buffer.from(r.body);
  if (body !== undefined) {
    if (r.chunked) headers['transfer-encoding'] = 'chunked';
    else headers['content-length'] = String(body.length);
  }
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method: r.method ?? 'GET', path: r.path, headers, setHost: false },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (body !== undefined && r.chunked) {
      for (let i = 0; i < body.length; i += 8_192) req.write(body.subarray(i, i + 8_192));
    } else if (body !== undefined) req.write(body);
    req.end();
  });
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample of a Prometheus text exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\"/g, '"').replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
    }
    const v = m[3]!;
    out.push({ name: m[1]!, labels, value: v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v) });
  }
  return out;
}

/** Samples of `name` whose labels include `labels`. */
export function samples(all: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The one sample of `name` with exactly these labels (the ones given; others ignored), or undefined. */
export function value(all: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(all, name, labels);
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0]?.value;
}

/** Sum of every sample of `name` matching `labels`. */
export function sum(all: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples(all, name, labels).reduce((n, s) => n + s.value, 0);
}
