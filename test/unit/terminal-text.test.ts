/**
 * Text on its way to a terminal (issue #27): upstream text shown with its control sequences
 * dropped, values quoted in errors with their controls escaped, JSON escaped and unchanged, and
 * the table renderer, which every command's tables go through, with 300 000 rows.
 */
import { describe, expect, it } from 'vitest';
import { shownCommanderError } from '../../src/cli/main.ts';
import { renderTable } from '../../src/cli/table.ts';
import { controlCharacterIn, escapeControls, quoteValue, terminalJson, terminalSafe } from '../../src/terminal-text.ts';

const ESC = '\x1b';
const UNSAFE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

describe('terminalSafe', () => {
  it('drops CSI, OSC (BEL or ST), 8-bit CSI, DCS, short ESC sequences, C0/C1 controls and bidi controls; keeps the words', () => {
    expect(terminalSafe(`a${ESC}[2J${ESC}[Hb`)).toBe('ab');
    expect(terminalSafe(`${ESC}]8;;https://evil.example/${ESC}\\click${ESC}]8;;${ESC}\\`)).toBe('click');
    expect(terminalSafe(`${ESC}]0;title\x07text`)).toBe('text');
    expect(terminalSafe('\u009b31mred\u009b0m')).toBe('red');
    expect(terminalSafe(`${ESC}Pq#0;2;0;0;0${ESC}\\after`)).toBe('after');
    expect(terminalSafe(`${ESC}creset${ESC}(Bx`)).toBe('resetx');
    expect(terminalSafe('\u202eevil\u202c \u2066iso\u2069')).toBe('evil iso');
    expect(terminalSafe('bell\x07 nul\x00 del\x7f')).toBe('bell nul del');
    // an unterminated OSC loses its introducer; what follows is plain text
    expect(terminalSafe(`${ESC}]8;;no end`)).toBe('8;;no end');
    // plain Unicode is untouched
    expect(terminalSafe('École «x» 東京 تحية emoji 🎉')).toBe('École «x» 東京 تحية emoji 🎉');
  });

  it('one line by default (tabs and line breaks become spaces); multiline keeps LF, and a CR cannot overwrite a line', () => {
    expect(terminalSafe('a\tb\nc\r\nd\re\u2028f')).toBe('a b c d e f');
    expect(terminalSafe('a\tb\nc\r\nd\re', { multiline: true })).toBe('a b\nc\nd\ne');
  });
});

describe('quoteValue, escapeControls, terminalJson, controlCharacterIn', () => {
  it('quotes a value with every control as an escape, and cuts a long one saying its length', () => {
    expect(quoteValue(`cats${ESC}[2J`)).toBe('"cats\\u001b[2J"');
    expect(quoteValue('a"b\\c\nd\u202e')).toBe('"a\\"b\\\\c\\nd\\u202e"');
    const long = quoteValue('x'.repeat(100_000));
    expect(long).toBe(`"${'x'.repeat(80)}…" (100000 characters)`);
    // never half a surrogate pair
    expect(quoteValue(`${'x'.repeat(79)}🎉🎉`)).toBe(`"${'x'.repeat(79)}…" (83 characters)`);
  });

  it('escapeControls keeps line feeds and escapes the rest', () => {
    expect(escapeControls(`a\nb${ESC}[2J\u009b\u202e`)).toBe('a\nb\\u001b[2J\\u009b\\u202e');
  });

  it('terminalJson parses back to the same value, with no raw control in its text', () => {
    const v = { title: `Nice${ESC}[2J \u009b31m \u202eevil\u2028`, n: 1 };
    const text = terminalJson(v, 2);
    expect(text).not.toMatch(UNSAFE);
    expect(JSON.parse(text)).toEqual(v);
  });

  it('controlCharacterIn finds NUL and other controls, not tab, LF or CR', () => {
    expect(controlCharacterIn('a\0b')).toEqual({ index: 1, escaped: '\\u0000' });
    expect(controlCharacterIn('a\u202eb')).toEqual({ index: 1, escaped: '\\u202e' });
    expect(controlCharacterIn('a\tb\nc\rd')).toBeUndefined();
  });
});

describe('renderTable', () => {
  it('renders 300 000 rows, each cell one line without controls', () => {
    const rows = Array.from({ length: 300_000 }, (_, i) => [i, `title ${i}`, i % 7 === 0 ? null : 'x']);
    rows[5] = [5, `Nice${ESC}[2J\u202e\nvideo`, 'x'];
    const out = renderTable(['id', 'title', 'flag'], rows);
    const lines = out.split('\n');
    expect(lines).toHaveLength(300_002);
    expect(lines[6]).toBe('5       Nice video    x');
    expect(out).not.toMatch(UNSAFE);
  });
});

describe('shownCommanderError', () => {
  it('cuts a long quoted value and escapes control characters in what commander prints', () => {
    expect(
      shownCommanderError(`error: command-argument value 'a${ESC}[2J\u202eb' is invalid for argument 'words'.\n`),
    ).toBe("error: command-argument value 'a\\u001b[2J\\u202eb' is invalid for argument 'words'.\n");
    const long = shownCommanderError(`error: option '--since <date>' argument '${'9'.repeat(1_000)}' is invalid.\n`);
    expect(long).toBe(`error: option '--since <date>' argument '${'9'.repeat(80)}…' (1000 characters) is invalid.\n`);
  });
});
