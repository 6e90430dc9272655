/**
 * Reads a `GET /videosite/batch/{jobId}` answer as a stream: items come out one at a time as
 * their bytes arrive, and only the top-level fields are kept, so a 5000-item transcript answer
 * (about 100 MB of JSON) is never held in memory as one parsed object.
 *
 * Items are yielded as parsed but unvalidated values: the caller validates each one on its own, so
 * one bad item is quarantined instead of failing the whole answer.
 *
 * How: a byte scanner finds where each element of `results` (and each top-level value) starts
 * and ends, tracking only nesting and strings (skipped with `indexOf`), and each element's text is
 * then parsed by the native `JSON.parse`. The answer has no paging upstream, so every poll reads
 * the whole batch again: a general-purpose streaming tokenizer (measured ~10 MB/s on an 86 MB
 * answer) made a poll of a big batch take longer than the 10 s within which items should land;
 * this reads the same answer several times faster. The element's text is yielded too, so the
 * landed copy is the text exactly as received.
 *
 * With `maxItemBytes`, memory stays bounded by it whatever the answer holds: an element larger
 * than the limit is scanned to its end but not kept (only its first `OVERSIZE_RAW_PREFIX_BYTES`)
 * nor parsed, and yielded as `oversize`; a top-level field larger than the limit is skipped when
 * it is not one the head keeps, and fails the read when it is.
 */

/** The top-level fields of BatchResults other than `results`, unvalidated. */
export interface RawBatchHead {
  status?: unknown;
  errorCode?: unknown;
  stats?: unknown;
  completedAt?: unknown;
  /** whether a `results` array was seen at all */
  sawResults: boolean;
}

/** One element of `results`: the parsed value and its JSON text exactly as received. */
export interface RawBatchItem {
  /** the parsed element; undefined when `oversize` */
  value: unknown;
  /** its JSON text exactly as received; when `oversize`, only its first 4096 bytes (as UTF-8) */
  raw: string;
  /** its position in `results` (skipped elements count too) */
  index: number;
  /**
   * Set when the element was larger than `maxItemBytes`: it was neither buffered beyond the
   * limit nor parsed (`value` is undefined, `raw` its first `OVERSIZE_RAW_PREFIX_BYTES` bytes).
   * `bytes` is its full size; `videoId` is read from its start when it begins, as items do,
   * with `{"videoId":"..."`.
   */
  oversize?: { bytes: number; videoId?: string };
}

/** Bytes of an oversize element kept in its `raw`. */
export const OVERSIZE_RAW_PREFIX_BYTES = 4096;

export class BatchStreamError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BatchStreamError';
  }
}

const HEAD_FIELDS = new Set(['status', 'errorCode', 'stats', 'completedAt']);
const VIDEO_ID_PREFIX = Buffer.from('{"videoId":"', 'utf8');
/** Bytes looked at for a leading videoId (IDs are short; a longer one is just parsed). */
const LEADING_ID_BYTES = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;

function isBlank(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** Where the scanner is in the top-level object. */
type State =
  | 'start' // before `{`
  | 'key-or-end' // after `{`: a key or `}`
  | 'key' // after `,`: a key
  | 'colon'
  | 'value'
  | 'comma-or-end' // after a member: `,` or `}`
  | 'item-or-end' // after `results: [`: an element or `]`
  | 'item' // after `,` in results: an element
  | 'item-comma-or-end' // after an element: `,` or `]`
  | 'done';

/**
 * The videoId when `first` (the start of an element) begins exactly with `{"videoId":"` and the
 * ID has no escapes; undefined otherwise.
 */
function leadingVideoIdOf(first: Buffer): string | undefined {
  if (first.length < VIDEO_ID_PREFIX.length + 1 || !first.subarray(0, VIDEO_ID_PREFIX.length).equals(VIDEO_ID_PREFIX))
    return undefined;
  const close = first.indexOf(QUOTE, VIDEO_ID_PREFIX.length);
  if (close === -1 || close > LEADING_ID_BYTES) return undefined;
  const id = first.subarray(VIDEO_ID_PREFIX.length, close);
  if (id.includes(BACKSLASH)) return undefined;
  return id.toString('utf8');
}

/** A JSON value whose bytes may span several chunks. */
class Capture {
  /** bytes of earlier chunks (none once the value is oversize) */
  parts: Buffer[] = [];
  /** bytes of the value in earlier chunks, kept or not */
  carried = 0;
  /**
   * Set once the value outgrew the limit: its first bytes (a copy, up to
   * OVERSIZE_RAW_PREFIX_BYTES); nothing else of it is kept from then on.
   */
  prefix: Buffer | undefined;
  /** where the value's bytes begin in the current chunk */
  start: number;
  depth = 0;
  inString = false;
  /** backslashes right before the end of the previous chunk, inside a string */
  backslashes = 0;
  /** a number, true, false or null: ends at the first delimiter */
  readonly primitive: boolean;
  private begun = false;

  /**
   * @param maxBytes keep at most about this many bytes of the value (undefined: no limit); a
   *   longer value is scanned to its end, but only its first bytes are kept
   */
  constructor(
    first: number,
    start: number,
    private readonly maxBytes: number | undefined,
  ) {
    this.start = start;
    this.primitive = first !== QUOTE && first !== LBRACE && first !== LBRACKET;
  }

  /** Whether the value, ending at `end` in the current chunk, is larger than the limit. */
  oversize(end: number): boolean {
    return this.prefix !== undefined || (this.maxBytes !== undefined && this.size(end) > this.maxBytes);
  }

  /** The value's full size in bytes, ending at `end` in the current chunk. */
  size(end: number): number {
    return this.carried + end - this.start;
  }

  /** Scan from `i`; the index just after the value's end, or -1 when it goes on in the next chunk. */
  scan(buf: Buffer, i: number): number {
    const n = buf.length;
    if (this.primitive) {
      while (i < n) {
        const b = buf[i]!;
        if (b === COMMA || b === RBRACE || b === RBRACKET || isBlank(b)) return i;
        i++;
      }
      return -1;
    }
    if (!this.begun) {
      this.begun = true;
      if (buf[i] === QUOTE) {
        // a bare string: its opening quote
        this.inString = true;
        i++;
      }
    }
    while (i < n) {
      if (this.inString) {
        // jump to the next quote; it closes the string unless an odd run of backslashes precedes it
        const q = buf.indexOf(QUOTE, i);
        let k = (q === -1 ? n : q) - 1;
        let run = 0;
        while (k >= i && buf[k] === BACKSLASH) {
          run++;
          k--;
        }
        if (k < i) run += this.backslashes;
        if (q === -1) {
          this.backslashes = run;
          return -1;
        }
        this.backslashes = 0;
        i = q + 1;
        if (run % 2 === 1) continue;
        this.inString = false;
        if (this.depth === 0) return i;
        continue;
      }
      const b = buf[i]!;
      if (b === QUOTE) this.inString = true;
      else if (b === LBRACE || b === LBRACKET) this.depth++;
      else if (b === RBRACE || b === RBRACKET) {
        this.depth--;
        if (this.depth === 0) return i + 1;
      }
      i++;
    }
    return -1;
  }

  /** Keep the rest of this chunk (or, past the limit, only what the prefix lacks); the value goes on in the next one. */
  carry(buf: Buffer): void {
    const piece = buf.subarray(this.start, buf.length);
    this.start = 0;
    this.carried += piece.length;
    if (this.prefix !== undefined) {
      this.growPrefix(piece);
      return;
    }
    this.parts.push(piece);
    if (this.maxBytes !== undefined && this.carried > this.maxBytes) {
      // too large: from here on only its first bytes are kept (copied, so the chunks can go)
      const pieces = this.parts;
      this.parts = [];
      this.prefix = Buffer.alloc(0);
      for (const p of pieces) this.growPrefix(p);
    }
  }

  private growPrefix(piece: Buffer): void {
    const room = OVERSIZE_RAW_PREFIX_BYTES - this.prefix!.length;
    if (room <= 0) return;
    this.prefix = Buffer.concat([this.prefix!, piece.subarray(0, room)]);
  }

  /** The first `OVERSIZE_RAW_PREFIX_BYTES` of an oversize value that ends at `end`. */
  oversizeRaw(buf: Buffer, end: number): Buffer {
    if (this.prefix === undefined) return Buffer.from(this.firstBytes(buf, end, OVERSIZE_RAW_PREFIX_BYTES));
    const room = OVERSIZE_RAW_PREFIX_BYTES - this.prefix.length;
    return room > 0
      ? Buffer.concat([this.prefix, buf.subarray(this.start, Math.min(end, this.start + room))])
      : this.prefix;
  }

  /**
   * The videoId when the value starts exactly with `{"videoId":"` and the ID has no escapes;
   * undefined otherwise (then the caller parses the element as usual).
   */
  leadingVideoId(buf: Buffer, end: number): string | undefined {
    return leadingVideoIdOf(
      this.prefix !== undefined ? this.oversizeRaw(buf, end) : this.firstBytes(buf, end, LEADING_ID_BYTES),
    );
  }

  /** At least `n` bytes from the value's start (fewer only if the value is shorter), at most `n` when it spans chunks. */
  private firstBytes(buf: Buffer, end: number, n: number): Buffer {
    if (this.parts.length === 0) return buf.subarray(this.start, Math.min(end, this.start + n));
    if (this.parts[0]!.length >= n) return this.parts[0]!.subarray(0, n);
    const pieces: Buffer[] = [];
    let size = 0;
    for (const p of [...this.parts, buf.subarray(this.start, end)]) {
      pieces.push(p);
      size += p.length;
      if (size >= n) break;
    }
    return Buffer.concat(pieces).subarray(0, n);
  }

  /** The value's text, ending at `end` in the current chunk. */
  text(buf: Buffer, end: number): string {
    if (this.parts.length === 0) return buf.toString('utf8', this.start, end);
    this.parts.push(buf.subarray(this.start, end));
    return Buffer.concat(this.parts).toString('utf8');
  }
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e: unknown) {
    throw new BatchStreamError(
      `batch answer is not valid JSON (${what}): ${e instanceof Error ? e.message : String(e)}`,
      { cause: e },
    );
  }
}

export interface ReadBatchOptions {
  /**
   * Called with the videoId of an element that starts with it (`{"videoId":"..."`, as answers
   * do); returning true drops the element unread: it is neither decoded nor parsed, so an item
   * the caller already has costs only the scan. Other elements are always yielded. Default none.
   */
  skip?: (videoId: string) => boolean;
  /**
   * Largest element of `results` read, in bytes; a larger one is yielded as `oversize` (its size
   * and first bytes, unparsed) and never buffered beyond about this much. Also bounds the
   * top-level fields. Default: no limit (the poller passes `ITEM_MAX_BYTES`, 8 MiB).
   */
  maxItemBytes?: number;
}

/**
 * Yield each element of `results` (value and text) as soon as its bytes are in; return the head
 * once the body ends. Throws BatchStreamError on malformed or truncated JSON (a skipped element
 * is checked only for its structure).
 */
export async function* readBatchItems(
  body: AsyncIterable<Uint8Array | string>,
  opts: ReadBatchOptions = {},
): AsyncGenerator<RawBatchItem, RawBatchHead, undefined> {
  const scanner = new AnswerScanner(opts);
  for await (const chunk of body) {
    scanner.scan(asBuffer(chunk));
    if (scanner.pending.length > 0) {
      const out = scanner.pending;
      scanner.pending = [];
      yield* out;
    }
  }
  if (!scanner.done) throw new BatchStreamError('batch answer ended before the JSON object was complete');
  return scanner.head;
}

function asBuffer(chunk: Uint8Array | string): Buffer {
  return typeof chunk === 'string'
    ? Buffer.from(chunk, 'utf8')
    : Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

function unexpected(what: string): BatchStreamError {
  return new BatchStreamError(`batch answer is not valid JSON: unexpected ${what}`);
}

/**
 * The answer's top-level object, scanned a chunk at a time: the structure between values byte by
 * byte (`structure`), each key, head value and element of `results` captured whole by a Capture
 * and then taken (`endCapture`, or `endOversize` past `maxItemBytes`). Completed elements wait in
 * `pending` for the generator to yield them.
 */
class AnswerScanner {
  readonly head: RawBatchHead = { sawResults: false };
  /** elements completed and not yet yielded */
  pending: RawBatchItem[] = [];
  private state: State = 'start';
  private key = '';
  private capture: Capture | undefined;
  /** what the capture is: a key, a top-level value, or an element of results */
  private capturing: 'key' | 'value' | 'item' = 'value';
  private itemIndex = 0;

  constructor(private readonly opts: ReadBatchOptions) {}

  get done(): boolean {
    return this.state === 'done';
  }

  scan(buf: Buffer): void {
    let i = 0;
    const n = buf.length;
    while (i < n) {
      if (this.capture) {
        i = this.continueCapture(this.capture, buf, i);
        continue;
      }
      const b = buf[i]!;
      if (isBlank(b)) {
        i++;
        continue;
      }
      i = this.structure(b, i);
    }
  }

  /** Scans the capture on from `i`; returns where scanning goes on. */
  private continueCapture(capture: Capture, buf: Buffer, i: number): number {
    const end = capture.scan(buf, i);
    if (end === -1) {
      capture.carry(buf);
      return buf.length;
    }
    this.capture = undefined;
    if (this.capturing === 'item' && this.opts.skip) {
      const id = capture.leadingVideoId(buf, end);
      if (id !== undefined && this.opts.skip(id)) {
        this.itemIndex++;
        this.state = 'item-comma-or-end';
        return end;
      }
    }
    if (capture.oversize(end)) this.endOversize(capture, buf, end);
    else this.endCapture(capture.text(buf, end));
    return end;
  }

  /** A capture larger than maxItemBytes: an element is yielded as `oversize`, a skipped field dropped; else the read fails. */
  private endOversize(c: Capture, buf: Buffer, end: number): void {
    const { maxItemBytes } = this.opts;
    if (this.capturing === 'item') {
      const first = c.oversizeRaw(buf, end);
      const videoId = leadingVideoIdOf(first);
      const bytes = c.size(end);
      this.pending.push({
        value: undefined,
        raw: first.toString('utf8'),
        index: this.itemIndex++,
        oversize: videoId === undefined ? { bytes } : { bytes, videoId },
      });
      this.state = 'item-comma-or-end';
    } else if (this.capturing === 'key') {
      throw new BatchStreamError(`batch answer: a key is larger than maxItemBytes (${maxItemBytes} bytes)`);
    } else if (this.key === 'results') {
      throw new BatchStreamError('batch answer: results is not an array');
    } else if (HEAD_FIELDS.has(this.key)) {
      throw new BatchStreamError(`batch answer: ${this.key} is larger than maxItemBytes (${maxItemBytes} bytes)`);
    } else {
      // a field the head does not keep: skipped unparsed
      this.state = 'comma-or-end';
    }
  }

  /** A key, a head value or an element, whole. */
  private endCapture(text: string): void {
    if (this.capturing === 'key') {
      const k = parseJson(text, 'key');
      if (typeof k !== 'string') throw unexpected('key');
      this.key = k;
      this.state = 'colon';
    } else if (this.capturing === 'item') {
      this.pending.push({ value: parseJson(text, 'results item'), raw: text, index: this.itemIndex++ });
      this.state = 'item-comma-or-end';
    } else {
      const value = parseJson(text, this.key);
      if (this.key === 'results') {
        this.head.sawResults = true;
        throw new BatchStreamError('batch answer: results is not an array');
      }
      if (HEAD_FIELDS.has(this.key)) (this.head as unknown as Record<string, unknown>)[this.key] = value;
      this.state = 'comma-or-end';
    }
  }

  private startCapture(what: 'key' | 'value' | 'item', b: number, i: number): void {
    this.capturing = what;
    this.capture = new Capture(b, i, this.opts.maxItemBytes);
  }

  /** One byte of structure (not blank, outside any capture); returns where scanning goes on. */
  private structure(b: number, i: number): number {
    switch (this.state) {
      case 'start':
        if (b !== LBRACE) throw new BatchStreamError('batch answer is not a JSON object');
        this.state = 'key-or-end';
        return i + 1;
      case 'key-or-end':
      case 'key':
        if (b === RBRACE && this.state === 'key-or-end') {
          this.state = 'done';
          return i + 1;
        }
        if (b !== QUOTE) throw unexpected('character where a key should be');
        this.startCapture('key', b, i);
        return i;
      case 'colon':
        if (b !== COLON) throw unexpected('character where ":" should be');
        this.state = 'value';
        return i + 1;
      case 'value':
        if (this.key === 'results' && b === LBRACKET) {
          this.head.sawResults = true;
          this.state = 'item-or-end';
          return i + 1;
        }
        this.startCapture('value', b, i);
        return i;
      case 'comma-or-end':
        if (b === COMMA) this.state = 'key';
        else if (b === RBRACE) this.state = 'done';
        else throw unexpected('character after a value');
        return i + 1;
      case 'item-or-end':
      case 'item':
        if (b === RBRACKET && this.state === 'item-or-end') {
          this.state = 'comma-or-end';
          return i + 1;
        }
        if (b === RBRACKET || b === COMMA) throw unexpected(`"${String.fromCharCode(b)}" in results`);
        this.startCapture('item', b, i);
        return i;
      case 'item-comma-or-end':
        if (b === COMMA) this.state = 'item';
        else if (b === RBRACKET) this.state = 'comma-or-end';
        else throw unexpected('character after a results item');
        return i + 1;
      case 'done':
        throw unexpected('data after the JSON object');
    }
  }
}

/**
 * Yield each element of `results` as it is parsed; return the head once the body ends.
 * Throws BatchStreamError on malformed or truncated JSON.
 */
export async function* readBatchStream(
  body: AsyncIterable<Uint8Array | string>,
): AsyncGenerator<unknown, RawBatchHead, undefined> {
  const gen = readBatchItems(body);
  for (;;) {
    const next = await gen.next();
    if (next.done) return next.value;
    yield next.value.value;
  }
}
