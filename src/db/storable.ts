/**
 * What Postgres cannot store byte-exact. A `text` value cannot hold U+0000, and `jsonb` rejects
 * the `\u0000` escape; a lone UTF-16 surrogate (legal in a JSON string escape, not in UTF-8) would
 * be turned into U+FFFD on the way to the server. Such values are found before the statement
 * runs, so one bad item is quarantined with a reason instead of failing a whole chunk.
 */

// U+0000, a high surrogate not followed by a low one, or a low one not preceded by a high one.
const UNSTORABLE_RE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * In JSON.stringify output: the escapes it writes for U+0000 and for lone surrogates (a valid
 * pair is written as is). A match only means "look closer" (`\\u0000` matches too).
 */
export const ESCAPED_UNSTORABLE_RE = /\\u(?:0000|d[89a-f])/i;

/** Why a value cannot be stored as delivered, and where it sits (`video.tags[3]`). */
export class UnstorableValueError extends Error {
  readonly path: string;
  readonly reason: string;
  constructor(path: string, reason: string) {
    super(`${path}: ${reason}`);
    this.name = 'UnstorableValueError';
    this.path = path;
    this.reason = reason;
  }
}

/** `String.prototype.isWellFormed` (Node 20; not in the ES2023 lib this project compiles against). */
const isWellFormed = (String.prototype as unknown as { isWellFormed(this: string): boolean }).isWellFormed;

/**
 * True when the string can go into a text or jsonb value unchanged. Runs on every landed item's
 * text: the native well-formedness check and a search for U+0000 are ~2.5x faster than
 * UNSTORABLE_RE (with its lookbehind) on the benchmark's 20 KB transcript items.
 */
export function isStorableText(s: string): boolean {
  return !s.includes('\u0000') && isWellFormed.call(s);
}

function describe(s: string): string {
  return s.includes('\u0000') ? 'contains U+0000, which Postgres text cannot hold' : 'contains a lone UTF-16 surrogate';
}

/**
 * The path of the first string (value or object key) in `value` that Postgres cannot store,
 * with the reason; undefined when everything is storable. Walks arrays and plain objects.
 */
export function findUnstorable(value: unknown, path = '(root)'): UnstorableValueError | undefined {
  if (typeof value === 'string') {
    return isStorableText(value) ? undefined : new UnstorableValueError(path, describe(value));
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = findUnstorable(value[i], `${path}[${i}]`);
      if (bad) return bad;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (!isStorableText(k)) return new UnstorableValueError(`${path}.${JSON.stringify(k)}`, `key ${describe(k)}`);
      const bad = findUnstorable(v, path === '(root)' ? k : `${path}.${k}`);
      if (bad) return bad;
    }
  }
  return undefined;
}

/** `s` with every character Postgres cannot store replaced by U+FFFD (for messages, not data). */
export function storableText(s: string): string {
  return isStorableText(s) ? s : s.replace(new RegExp(UNSTORABLE_RE.source, 'g'), '\uFFFD');
}

/** Throws UnstorableValueError when `value` holds a string Postgres cannot store. */
export function assertStorable(value: unknown, path: string): void {
  const bad = findUnstorable(value, path);
  if (bad) throw bad;
}

/** A JSON number that fits a bigint column exactly; throws otherwise. */
export function toBigintColumn(value: number | null | undefined, path: string): number | null {
  if (value === null || value === undefined) return null;
  if (!Number.isSafeInteger(value)) {
    throw new UnstorableValueError(path, `${value} is not a whole number a bigint column holds exactly`);
  }
  return value;
}

/**
 * An ISO 8601 timestamp a timestamptz column holds: parsable, and within years 1..9999 (Postgres
 * has no year 0 and rejects some far dates JavaScript accepts). Throws otherwise.
 */
export function toTimestamptzColumn(value: string | null | undefined, path: string): string | null {
  if (value === null || value === undefined) return null;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new UnstorableValueError(path, `${JSON.stringify(value)} is not a date`);
  const year = d.getUTCFullYear();
  if (year < 1 || year > 9999) {
    throw new UnstorableValueError(
      path,
      `${JSON.stringify(value)} is outside the years a timestamptz column holds here (1..9999)`,
    );
  }
  return value;
}

/**
 * The first number in a JSON text that Postgres numeric (and so jsonb) cannot hold, or
 * undefined: an exponent past numeric's range (`1e200000` overflows; `1e-200000` would be read
 * by JavaScript as 0, silently), or more digits than numeric keeps. Strings are skipped, so text
 * that merely looks like such a number is fine. Meant for texts the cheap `HUGE_NUMBER_RE`
 * pre-check flagged.
 */
export function findUnstorableNumber(text: string): string | undefined {
  const NUMBER_RE = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // skip the string: to the next quote not escaped by an odd run of backslashes
      let j = i + 1;
      for (;;) {
        const q = text.indexOf('"', j);
        if (q === -1) return undefined;
        let k = q - 1;
        let run = 0;
        while (text.charCodeAt(k) === 0x5c) {
          run++;
          k--;
        }
        j = q + 1;
        if (run % 2 === 0) break;
      }
      i = j;
      continue;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      NUMBER_RE.lastIndex = i;
      const m = NUMBER_RE.exec(text);
      if (!m) {
        i++;
        continue;
      }
      const token = m[0];
      if (!isNumericStorable(token)) return token.length > 40 ? `${token.slice(0, 40)}…` : token;
      i += token.length;
      continue;
    }
    i++;
  }
  return undefined;
}

/** Postgres numeric: up to 131072 digits before the decimal point, 16383 after. */
function isNumericStorable(token: string): boolean {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(token);
  if (!m) return true;
  const intDigits = m[1]!.replace(/^0+/, '').length;
  const fracDigits = (m[2] ?? '').length;
  const exp = Number(m[3] ?? 0);
  if (intDigits === 0 && !/[1-9]/.test(m[2] ?? '')) return true; // zero, however written
  // digits before the point once the exponent is applied, and after it
  const before = intDigits + exp;
  const after = fracDigits - exp;
  return before <= 131072 && after <= 16383;
}
