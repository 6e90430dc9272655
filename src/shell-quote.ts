/**
 * A word of a command a message suggests (`replay --quarantined --batch JOB`), written so that a
 * POSIX shell reads it back unchanged: pasting the hint runs that command and nothing else,
 * whatever the word holds (`$(...)`, backquotes, `;`, quotes, a newline).
 */

/** Characters no shell treats specially: such a word needs no quotes. */
const PLAIN_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** Characters a single-quoted word cannot show on a terminal (they are dropped on the way). */
const CONTROL = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

/**
 * `word` for a shell: as is when plain; else in single quotes, where nothing expands (a quote
 * inside written `'\''`); a word holding control characters in `$'...'` with those characters as
 * `\xHH` bytes (bash, zsh, ksh and POSIX.1-2024 read it), so the hint shown is the word meant.
 */
export function shellQuote(word: string): string {
  if (PLAIN_WORD.test(word)) return word;
  if (!CONTROL.test(word)) return `'${word.replace(/'/g, `'\\''`)}'`;
  let out = '';
  for (const ch of word) {
    if (ch === '\\' || ch === "'") out += `\\${ch}`;
    else if (CONTROL.test(ch)) for (const b of Buffer.from(ch, 'utf8')) out += `\\x${b.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `$'${out}'`;
}

/** A command line for a hint: its words, each quoted as it needs. */
export function shellCommand(...words: (string | number)[]): string {
  return words.map((w) => shellQuote(String(w))).join(' ');
}
