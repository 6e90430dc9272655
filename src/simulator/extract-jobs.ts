/**
 * Extract jobs of `POST /extract` (always answered 202 `{jobId}`), read at `GET /extract/{jobId}`:
 * `queued`, then `active`, then `completed` with `data` shaped by the request's JSON Schema, or,
 * when the request gave only a prompt, by a schema of the job's own, answered beside it as
 * `schema`. Like the other jobs, the state is computed from the clock. A result is kept
 * `EXTRACT_RESULT_KEPT_MS` after completion, then the job is forgotten (404).
 */
import { randomUUID } from 'node:crypto';
import type { ExtractJobResult } from '../api/schemas.ts';
import { rngFor, type Rng } from './prng.ts';
import { sentence, title, words } from './text.ts';

/** How long a completed extract job's result is kept (UPSTREAM.md: 1 hour), simulated ms. */
export const EXTRACT_RESULT_KEPT_MS = 3_600_000;

/** How deep generated data follows nested schemas; deeper values are strings. */
const MAX_DEPTH = 6;

type JsonSchema = Record<string, unknown>;

export interface ExtractJobRequest {
  /** what the data is about (a video ID or a media URL): the same media gives the same data */
  mediaKey: string;
  prompt: string | undefined;
  schema: JsonSchema | undefined;
}

interface ExtractJob extends ExtractJobRequest {
  id: string;
  apiKey: string;
  createdMs: number;
  queuedMs: number;
  runMs: number;
}

export interface ExtractJobTimings {
  queuedMs: number;
  /** simulated ms an extract job stays `active` */
  runMs: number;
}

/** The schema a job writes itself when the request gave only a prompt. */
const PROMPT_ONLY_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    summary: { type: 'string', description: 'Brief summary of the video' },
    topics: { type: 'array', items: { type: 'string' }, description: 'Main topics discussed' },
  },
  required: ['summary', 'topics'],
};

function firstType(schema: JsonSchema): string | undefined {
  const t = schema.type;
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) return t.find((x): x is string => typeof x === 'string' && x !== 'null');
  if (typeof schema.properties === 'object') return 'object';
  if (typeof schema.items === 'object') return 'array';
  return undefined;
}

function asSchema(v: unknown): JsonSchema {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as JsonSchema) : {};
}

function bounded(schema: JsonSchema, lo: number, hi: number): [number, number] {
  const min = typeof schema.minimum === 'number' ? schema.minimum : lo;
  const max = typeof schema.maximum === 'number' ? schema.maximum : Math.max(min, hi);
  return [min, Math.max(min, max)];
}

/**
 * A value the schema accepts, for the schemas a person writes for extraction (objects, arrays,
 * strings with or without `enum` and `format`, numbers, booleans); not a full JSON Schema
 * generator: combinators fall back to their first branch.
 */
function instanceOf(schema: JsonSchema, r: Rng, depth: number): unknown {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return r.pick(schema.enum);
  if ('const' in schema) return schema.const;
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) {
    const branches = schema[k];
    if (Array.isArray(branches) && branches.length > 0) return instanceOf(asSchema(branches[0]), r, depth);
  }
  if (depth >= MAX_DEPTH) return words(r, 'en', 2);
  switch (firstType(schema)) {
    case 'object': {
      const props = asSchema(schema.properties);
      const required = new Set(Array.isArray(schema.required) ? schema.required : []);
      const out: Record<string, unknown> = {};
      for (const [key, sub] of Object.entries(props)) {
        if (required.has(key) || r.chance(0.7)) out[key] = instanceOf(asSchema(sub), r, depth + 1);
      }
      return out;
    }
    case 'array': {
      const minItems = typeof schema.minItems === 'number' ? schema.minItems : 1;
      const maxItems = typeof schema.maxItems === 'number' ? schema.maxItems : Math.max(minItems, 4);
      const n = r.int(minItems, Math.max(minItems, maxItems));
      const items = asSchema(schema.items);
      return Array.from({ length: n }, () => instanceOf(items, r, depth + 1));
    }
    case 'integer': {
      const [min, max] = bounded(schema, 0, 100);
      return r.int(Math.ceil(min), Math.floor(max));
    }
    case 'number': {
      const [min, max] = bounded(schema, 0, 100);
      return Math.round((min + r.next() * (max - min)) * 100) / 100;
    }
    case 'boolean':
      return r.chance(0.5);
    case 'null':
      return null;
    default:
      if (schema.format === 'date-time')
        return new Date(Date.UTC(2024, 0, 1) + r.int(0, 365) * 86_400_000).toISOString();
      if (schema.format === 'uri') return `https://example.com/${words(r, 'en', 1)}`;
      return r.chance(0.5) ? title(r, 'en') : sentence(r, 'en', 4, 14);
  }
}

export class ExtractJobs {
  private readonly jobs = new Map<string, ExtractJob>();

  constructor(private readonly seed: number) {}

  create(apiKey: string, req: ExtractJobRequest, nowMs: number, t: ExtractJobTimings): string {
    for (const [id, job] of this.jobs) if (nowMs >= endOf(job) + EXTRACT_RESULT_KEPT_MS) this.jobs.delete(id);
    const id = `ej_${randomUUID()}`;
    this.jobs.set(id, { ...req, id, apiKey, createdMs: nowMs, queuedMs: t.queuedMs, runMs: t.runMs });
    return id;
  }

  /** The ExtractJobResult at `nowMs`, or undefined when the job is unknown, forgotten or another key's. */
  view(id: string, apiKey: string, nowMs: number): ExtractJobResult | undefined {
    const job = this.jobs.get(id);
    if (!job || job.apiKey !== apiKey) return undefined;
    if (nowMs >= endOf(job) + EXTRACT_RESULT_KEPT_MS) {
      this.jobs.delete(id);
      return undefined;
    }
    if (nowMs < job.createdMs + job.queuedMs) return { status: 'queued', error: null };
    if (nowMs < endOf(job)) return { status: 'active', error: null };
    const r = rngFor(this.seed, 'extract', job.mediaKey, job.prompt ?? '', JSON.stringify(job.schema ?? null));
    const schema = job.schema ?? PROMPT_ONLY_SCHEMA;
    const value = instanceOf(schema, r, 0);
    // `data` is an object whatever the schema's root says
    const data =
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : { value };
    return job.schema === undefined
      ? { status: 'completed', error: null, data, schema }
      : { status: 'completed', error: null, data };
  }
}

function endOf(job: ExtractJob): number {
  return job.createdMs + job.queuedMs + job.runMs;
}
