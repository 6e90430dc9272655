/**
 * Text from elsewhere on its way to a terminal: titles, channel names, job IDs and error messages
 * from the upstream, or a person's own argument quoted back in an error. A terminal acts on what
 * it reads: ESC sequences clear the screen, move the cursor, retitle the window or make a link
 * (OSC 8), C1 controls do the same in one character, a carriage return overwrites the line, and
 * bidi controls reorder what is shown. So:
 *
 * - human output shows such text through `terminalSafe`: the sequences and controls dropped, the
 *   words kept (the table renderer and every printer of upstream text);
 * - an error quotes a value through `quoteValue`: every control written as an escape, so the
 *   person sees what was given, and cut short when long;
 * - JSON output keeps the text as it is, with those characters escaped in the JSON (`terminalJson`).
 */

/**
 * ECMA-48 escape sequences: a CSI (7-bit or the C1 form) up to its final byte; a control string
 * (OSC, DCS, SOS, PM, APC) up to its terminator (BEL or ST); any other ESC sequence. An
 * unterminated control string loses only its introducer: the rest shows as text, controls removed.
 */
const ESCAPE_SEQUENCE =
  /(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)|\x1b[\x20-\x2f]*[\x30-\x7e]/g;

/** Line breaks a terminal acts on: CR moves to the start of the line (and overwrites it). */
const LINE_BREAK = /\r\n?|[\n\u2028\u2029]/g;

/** C0 controls (but tab and line feed), DEL, C1 controls. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** Bidi controls (marks, embeddings, overrides, isolates): they reorder the characters shown. */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Every character `quoteValue` and `escapeControls` write as an escape. */
const ESCAPED = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/** What `JSON.stringify` leaves as it is in a string and a terminal would act on. */
const JSON_UNESCAPED = /[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/** How much of a value an error quotes, in characters. */
export const VALUE_SHOWN_MAX_CHARS = 80;

export interface TerminalSafeOptions {
  /** keep line breaks (as `\n`); default false: every line break and tab becomes a space */
  multiline?: boolean;
}

/**
 * `text` as a terminal may show it: escape sequences, controls and bidi controls removed; tabs
 * and (unless `multiline`) line breaks become spaces, so a table cell stays one line.
 */
export function terminalSafe(text: string, opts: TerminalSafeOptions = {}): string {
  return text
    .replace(ESCAPE_SEQUENCE, '')
    .replace(LINE_BREAK, opts.multiline ? '\n' : ' ')
    .replace(/\t/g, ' ')
    .replace(CONTROL, '')
    .replace(BIDI, '');
}

function escapeChar(c: string): string {
  switch (c) {
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
    default:
      return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  }
}

/**
 * Free text (a message) with every control but the line feed written as an escape (`\u001b`):
 * nothing in it acts on a terminal, and nothing is lost.
 */
export function escapeControls(text: string): string {
  return text.replace(ESCAPED, (c) => (c === '\n' ? c : escapeChar(c)));
}

/**
 * A value as an error message quotes it: in double quotes, backslash, quote and every control
 * written as an escape, cut to `maxChars` with its length said when longer:
 * `"cats\u001b[2J"`, `"xxxxxxxx…" (100000 characters)`.
 */
export function quoteValue(value: string, maxChars = VALUE_SHOWN_MAX_CHARS): string {
  let shown = value.length > maxChars ? value.slice(0, maxChars) : value;
  // never half a surrogate pair
  if (shown.length < value.length && /[\ud800-\udbff]$/.test(shown)) shown = shown.slice(0, -1);
  const body = shown.replace(/[\\"]/g, (c) => `\\${c}`).replace(ESCAPED, escapeChar);
  return shown.length < value.length ? `"${body}…" (${value.length} characters)` : `"${body}"`;
}

/**
 * JSON for output a terminal may show: `JSON.stringify`, with the controls it leaves as they are
 * (DEL, C1, bidi, line and paragraph separators) escaped too. Parsed, it is the same value.
 */
export function terminalJson(value: unknown, space?: number): string {
  return (JSON.stringify(value, null, space) ?? 'null').replace(JSON_UNESCAPED, escapeChar);
}

/** The first control character (but tab, LF and CR) or bidi control in `text`, and where. */
export function controlCharacterIn(text: string): { index: number; escaped: string } | undefined {
  const m = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/.exec(text);
  return m === null ? undefined : { index: m.index, escaped: escapeChar(m[0]) };
}

/**
 * Why `text` cannot be taken as `field`, when it holds a control character, else null: the
 * message names the field, the value and the character.
 */
export function controlCharacterProblem(field: string, text: string): string | null {
  const found = controlCharacterIn(text);
  if (found === undefined) return null;
  return (
    `${field}: ${quoteValue(text)} holds a control character (${found.escaped} at position ${found.index + 1}); ` +
    'expected text without control characters'
  );
}
