/**
 * Transcript jobs of `GET /transcript` (answer 202 `{jobId}`), read at `GET /transcript/{jobId}`:
 * `queued`, then `active`, then `completed` with the transcript (or `failed` with an Error
 * object), forgotten (404) once its result has been kept `resultMs` after the end (the interface:
 * 1 hour). Like batches, the state is computed from the clock.
 * A `generate` job always transcribes the audio; an `auto` one uses captions when the video has
 * them in the language asked for.
 */
import { randomUUID } from 'node:crypto';
import type { ErrorBody, JobResult, MediaTranscriptQuery, TranscriptChunk } from '../api/schemas.ts';
import type { Catalog, VideoRef } from './catalog.ts';
import { rngFor } from './prng.ts';
import { captionText, LANGS, type Lang } from './text.ts';
import { chooseLang, shapeContent } from './transcripts.ts';
import { hasSpeech } from './social.ts';

export interface TranscriptJobRequest {
  /** the catalog video, or undefined for a media URL outside the catalog */
  ref: VideoRef | undefined;
  url: string;
  lang: string | undefined;
  text: boolean | undefined;
  chunkSize: number | undefined;
  /** `native`, `auto` or `generate`, as asked (default `auto`) */
  mode: NonNullable<MediaTranscriptQuery['mode']>;
}

interface TranscriptJob extends TranscriptJobRequest {
  id: string;
  apiKey: string;
  createdMs: number;
  queuedMs: number;
  runMs: number;
  resultMs: number;
}

export interface TranscriptJobTimings {
  queuedMs: number;
  /** simulated ms a transcript job stays `active` */
  runMs: number;
  /** simulated ms the result is kept after the job ends; then the job answers 404 */
  resultMs: number;
}

/** Chunks "generated from the audio": deterministic per URL and language. */
function generatedChunks(seed: number, key: string, lang: string, count: number): TranscriptChunk[] {
  const r = rngFor(seed, 'generated', key, lang);
  const scriptLang: Lang = (LANGS as readonly string[]).includes(lang) ? (lang as Lang) : 'en';
  const chunks: TranscriptChunk[] = [];
  let offset = 0;
  for (let i = 0; i < count; i++) {
    const duration = r.int(1500, 6000);
    chunks.push({ text: captionText(r, scriptLang), offset, duration, lang });
    offset += duration + r.int(0, 400);
  }
  return chunks;
}

/** Chunks a media URL outside the catalog gets (it has no captions: always generated). */
function outsideChunks(seed: number, url: string, lang: string): TranscriptChunk[] {
  const count = 3 + rngFor(seed, 'generated-count', url).int(0, 30);
  return generatedChunks(seed, url, lang, count);
}

export class TranscriptJobs {
  private readonly jobs = new Map<string, TranscriptJob>();

  constructor(
    private readonly seed: number,
    private readonly catalog: Catalog,
  ) {}

  /**
   * Seconds of media behind `url`, which a generated transcript is priced by: the catalog
   * video's duration, or for a URL outside the catalog the end of its generated speech.
   */
  mediaDurationS(ref: VideoRef | undefined, url: string, lang: string | undefined): number {
    if (ref) return this.catalog.facts(ref).durationS;
    const last = outsideChunks(this.seed, url, lang ?? 'en').at(-1);
    return last === undefined ? 0 : Math.ceil((last.offset + last.duration) / 1000);
  }

  create(apiKey: string, req: TranscriptJobRequest, nowMs: number, t: TranscriptJobTimings): string {
    for (const [id, job] of this.jobs) {
      if (nowMs >= job.createdMs + job.queuedMs + job.runMs + job.resultMs) this.jobs.delete(id);
    }
    const id = `tj_${randomUUID()}`;
    this.jobs.set(id, {
      ...req,
      id,
      apiKey,
      createdMs: nowMs,
      queuedMs: t.queuedMs,
      runMs: t.runMs,
      resultMs: t.resultMs,
    });
    return id;
  }

  /** The JobResult at `nowMs`, or undefined when the job is unknown, its result expired, or another key's. */
  view(id: string, apiKey: string, nowMs: number): JobResult | undefined {
    const job = this.jobs.get(id);
    if (!job || job.apiKey !== apiKey) return undefined;
    const endMs = job.createdMs + job.queuedMs + job.runMs;
    if (nowMs >= endMs + job.resultMs) {
      this.jobs.delete(id);
      return undefined;
    }
    if (nowMs < job.createdMs + job.queuedMs) return { status: 'queued', error: null };
    if (nowMs < endMs) return { status: 'active', error: null };
    return this.result(job);
  }

  private result(job: TranscriptJob): JobResult {
    const fail = (error: ErrorBody): JobResult => ({ status: 'failed', error });
    if (job.ref) {
      const f = this.catalog.facts(job.ref);
      if (f.fate === 'private') {
        return fail({ error: 'forbidden', message: 'The video is private.', details: `video ${f.id} is private` });
      }
      if (f.fate === 'gone') {
        return fail({ error: 'not-found', message: 'The video does not exist.', details: `video ${f.id} was removed` });
      }
      const lang = chooseLang(f.transcriptLanguages, job.lang);
      if (job.mode !== 'generate' && lang !== undefined && (job.lang === undefined || lang === job.lang)) {
        const content = shapeContent(this.catalog.transcriptChunks(job.ref, lang), job);
        return { status: 'completed', error: null, content, lang, availableLangs: [...f.transcriptLanguages] };
      }
      // generated from the audio in the requested language (or English)
      const genLang = job.lang ?? 'en';
      const content = shapeContent(
        generatedChunks(this.seed, f.id, genLang, Math.max(3, Math.round(f.durationS / 8) % 40)),
        job,
      );
      const availableLangs: string[] = [...f.transcriptLanguages];
      if (!availableLangs.includes(genLang)) availableLangs.push(genLang);
      return { status: 'completed', error: null, content, lang: genLang, availableLangs };
    }
    const genLang = job.lang ?? 'en';
    // media without speech: an empty transcript (charged as any other)
    const chunks = hasSpeech(this.seed, job.url) ? outsideChunks(this.seed, job.url, genLang) : [];
    const content = shapeContent(chunks, job);
    return { status: 'completed', error: null, content, lang: genLang, availableLangs: [genLang] };
  }
}
