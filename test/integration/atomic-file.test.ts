/**
 * The export's output file on its own (src/pipeline/commands/atomic-file.ts), on the real filesystem:
 * the temporary file is opened exclusively, so a symlink or file planted at its name is never
 * written through (the next name is tried; past the last, nothing is written); a target turned
 * into a special file while the data was written is refused at the rename; a failure leaves no
 * temporary file. test/integration/export.test.ts drives the same through the CLI.
 */
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NotRegularFileError, openAtomicFile, TEMP_NAME_ATTEMPTS } from '../../src/pipeline/commands/atomic-file.ts';

const root = mkdtempSync(join(tmpdir(), 'vsi-atomic-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const fresh = (name: string) => mkdtempSync(join(root, `${name}-`));
const names = (d: string) => readdirSync(d).sort();

describe('the temporary file', () => {
  it('is never opened through a symlink or file planted at its name: the next name is used', async () => {
    const d = fresh('planted');
    const victim = join(d, 'victim');
    writeFileSync(victim, 'precious\n');
    const planted = ['.out.planted-1.partial', '.out.planted-2.partial'];
    symlinkSync(victim, join(d, planted[0]!));
    writeFileSync(join(d, planted[1]!), 'someone else\n');
    const tried = [...planted, '.out.mine.partial'];
    const file = await openAtomicFile(join(d, 'out'), { tempName: () => tried.shift()! });
    expect(file.tempPath).toBe(join(d, '.out.mine.partial'));
    file.stream.write('new data\n');
    await file.commit();
    expect(readFileSync(join(d, 'out'), 'utf8')).toBe('new data\n');
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(readFileSync(join(d, planted[1]!), 'utf8')).toBe('someone else\n');
    expect(lstatSync(join(d, planted[0]!)).isSymbolicLink()).toBe(true);
  });

  it(`gives up after ${TEMP_NAME_ATTEMPTS} taken names, having written nothing`, async () => {
    const d = fresh('taken');
    const victim = join(d, 'victim');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, join(d, '.out.same.partial'));
    await expect(openAtomicFile(join(d, 'out'), { tempName: () => '.out.same.partial' })).rejects.toMatchObject({
      code: 'EEXIST',
    });
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(names(d)).toEqual(['.out.same.partial', 'victim']);
  });

  it('a target turned into a FIFO while the data was written is refused at the rename; the temporary file goes', async () => {
    const d = fresh('swapped');
    const out = join(d, 'out');
    const file = await openAtomicFile(out);
    file.stream.write('data\n');
    expect(spawnSync('mkfifo', [out]).status).toBe(0);
    await expect(file.commit()).rejects.toThrow(NotRegularFileError);
    expect(lstatSync(out).isFIFO()).toBe(true);
    expect(names(d)).toEqual(['out']);
  });

  it('discard() and discardSync() remove it and leave the target as it was', async () => {
    const d = fresh('discard');
    const out = join(d, 'out');
    writeFileSync(out, 'before\n');
    for (const how of ['discard', 'discardSync'] as const) {
      const file = await openAtomicFile(out);
      file.stream.write('half\n');
      expect(names(d)).toHaveLength(2);
      if (how === 'discard') await file.discard();
      else file.discardSync();
      expect(names(d), how).toEqual(['out']);
      expect(readFileSync(out, 'utf8')).toBe('before\n');
    }
  });
});
