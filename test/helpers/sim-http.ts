/**
 * Plain HTTP calls to the simulator for its own tests (no typed client: the simulator is tested
 * on the wire, as any client would see it).
 */
import { request } from 'undici';

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** the parsed body, or undefined when it is not JSON */
  json: unknown;
}

export interface CallOptions {
  /** the x-api-key header; null sends none; default the simulator's dev key */
  key?: string | null;
  query?: Record<string, string | number | boolean>;
  /** sent as JSON */
  body?: unknown;
  /** sent as is */
  rawBody?: string;
}

export async function call(
  sim: { baseUrl: string; apiKey: string },
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  opts: CallOptions = {},
): Promise<CallResult> {
  const url = new URL(path.startsWith('http') ? path : `${sim.baseUrl}${path}`);
  for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, String(v));
  const headers: Record<string, string> = {};
  const key = opts.key === undefined ? sim.apiKey : opts.key;
  if (key !== null) headers['x-api-key'] = key;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  const res = await request(url, { method, headers, body });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** Calls to the admin API (`/__admin/...`). */
export function admin(
  sim: { url: string; apiKey: string },
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<CallResult> {
  return call({ baseUrl: `${sim.url}/__admin`, apiKey: sim.apiKey }, method, path, { key: null, body });
}
