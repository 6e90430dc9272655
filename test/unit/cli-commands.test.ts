/**
 * The root's help lists the commands from COMMANDS (src/cli/main.ts) without importing them, and
 * the command a process runs is chosen from its argv before anything is parsed: the table must
 * say what the commands' own files say, and the choice must be the command commander runs.
 */
import { describe, expect, it } from 'vitest';
import { COMMANDS, commandOf, loadProgram } from '../../src/cli/main.ts';

describe('the command table', () => {
  it('names every command, in order, with the summary its own file gives it', async () => {
    const program = await loadProgram();
    const registered = program.commands.map((c) => [c.name(), c.summary() || c.description()]);
    expect(Object.entries(COMMANDS).map(([name, c]) => [name, c.summary])).toEqual(registered);
  });

  it('registers the loaded command in full and the others by name and summary only', async () => {
    const program = await loadProgram(['status']);
    const status = program.commands.find((c) => c.name() === 'status')!;
    expect(status.options.map((o) => o.long)).toContain('--json');
    const others = program.commands.filter((c) => c !== status);
    expect(others.map((c) => c.name())).toEqual(Object.keys(COMMANDS).filter((n) => n !== 'status'));
    for (const c of others) expect([c.options.length, c.commands.length], c.name()).toEqual([0, 0]);
  });
});

describe('commandOf: the command argv runs', () => {
  it('is the first word that is not an option, or the one after `help`', () => {
    expect(commandOf(['status', '--json'])).toBe('status');
    expect(commandOf(['sources', 'add', 'channel', '@x'])).toBe('sources');
    expect(commandOf(['--help'])).toBeUndefined();
    expect(commandOf(['-V'])).toBeUndefined();
    expect(commandOf([])).toBeUndefined();
    expect(commandOf(['backfill', '--help'])).toBe('backfill');
    expect(commandOf(['help', 'replay'])).toBe('replay');
    expect(commandOf(['help'])).toBeUndefined();
    expect(commandOf(['--', 'demo'])).toBe('demo');
  });

  it('is none for a word that is not a command (commander then reports it, exit 2)', () => {
    expect(commandOf(['stauts'])).toBeUndefined();
    expect(commandOf(['constructor'])).toBeUndefined();
    expect(commandOf(['toString', '--help'])).toBeUndefined();
  });
});
