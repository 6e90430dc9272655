/**
 * A file written beside its final path and put in place in one step once complete, so that a
 * failed or interrupted run leaves what was there before (`export --out PATH`). Written so that
 * another user of the directory cannot turn it against its target:
 *
 * - the temporary file has a random name (`.<name>.<16 hex>.partial`) and is created exclusively
 *   (O_CREAT|O_EXCL: a file or symlink planted at that name fails the open, and nothing is
 *   written through it), readable by its owner only while it is written;
 * - the target must be absent or a regular file: a symlink, FIFO, socket, device or directory is
 *   refused before anything is created (and again just before the rename), since the rename would
 *   replace it (a FIFO a reader waits on, `/dev/null` for a root user);
 * - an existing target's mode is kept (a new file gets the mode the umask gives); the data is
 *   fsynced before the rename and the directory after it, so a crash leaves the old file or the
 *   new one, never an empty one;
 * - discard() and discardSync() (for a signal handler, which cannot wait) remove the temporary file.
 *
 * The rename itself never follows a symlink: a target swapped for one at the last moment is
 * replaced, not written through.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, fchmod, fsync, open as openFd, unlinkSync, type Stats } from 'node:fs';
import { lstat, open, readlink, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { promisify } from 'node:util';

// a plain descriptor, not a FileHandle: the stream must leave it open for fsync and chmod, and a
// FileHandle's close() waits for a stream that does not close it (Node 20)
const openFdAsync = promisify(openFd);
const fsyncAsync = promisify(fsync);
const fchmodAsync = promisify(fchmod);

/** Random bytes in a temporary file's name (hex: twice as many characters). */
export const TEMP_NAME_RANDOM_BYTES = 8;
/** Names tried when one is taken (a leftover, or something planted there) before giving up. */
export const TEMP_NAME_ATTEMPTS = 5;
/** The most of the target's name kept in the temporary file's (a name must fit NAME_MAX, 255 bytes). */
const TEMP_NAME_BASE_MAX_CHARS = 100;
/** Mode of the temporary file while it is written. */
const TEMP_FILE_MODE = 0o600;
/** What a new file gets before the umask, as open(2) and fs.writeFile give it. */
const NEW_FILE_MODE = 0o666;

/** What lies at a path, as lstat sees it (a symlink is not followed). */
export type TargetKind =
  | 'missing'
  | 'file'
  | 'directory'
  | 'symbolic link'
  | 'FIFO'
  | 'socket'
  | 'character device'
  | 'block device'
  | 'other';

export interface TargetState {
  kind: TargetKind;
  /** permission bits of a file */
  mode?: number;
  /** where a symbolic link points */
  linkTo?: string;
}

function kindOf(st: Stats): TargetKind {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isSymbolicLink()) return 'symbolic link';
  if (st.isFIFO()) return 'FIFO';
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice()) return 'character device';
  if (st.isBlockDevice()) return 'block device';
  return 'other';
}

/** What lies at `path`, without following or opening it. */
export async function inspectTarget(path: string): Promise<TargetState> {
  let st: Stats;
  try {
    st = await lstat(path);
  } catch (e: unknown) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    throw e;
  }
  const kind = kindOf(st);
  if (kind === 'file') return { kind, mode: st.mode & 0o7777 };
  if (kind === 'symbolic link') return { kind, linkTo: await readlink(path).catch(() => undefined) };
  return { kind };
}

/** `a FIFO (named pipe)`, `a symbolic link (to /etc/passwd)`, ... */
export function describeTarget(t: TargetState): string {
  switch (t.kind) {
    case 'symbolic link':
      return `a symbolic link${t.linkTo === undefined ? '' : ` (to ${t.linkTo})`}`;
    case 'FIFO':
      return 'a FIFO (named pipe)';
    case 'other':
      return 'a special file';
    default:
      return `a ${t.kind}`;
  }
}

/** The target exists and is not a regular file: nothing was created. */
export class NotRegularFileError extends Error {
  constructor(
    readonly path: string,
    readonly target: TargetState,
  ) {
    super(`${path}: is ${describeTarget(target)}, not a regular file`);
    this.name = 'NotRegularFileError';
  }
}

function assertReplaceable(path: string, t: TargetState): void {
  if (t.kind !== 'missing' && t.kind !== 'file') throw new NotRegularFileError(path, t);
}

export interface AtomicFile {
  /** the final path */
  readonly path: string;
  /** where the data goes until commit() */
  readonly tempPath: string;
  /** the temporary file's stream (ended by commit()) */
  readonly stream: Writable;
  /** flush, fsync, give it the target's mode, rename it onto the target, fsync the directory */
  commit(): Promise<void>;
  /** close and remove the temporary file (after a failure); the target is left as it was */
  discard(): Promise<void>;
  /** remove the temporary file now, from a signal handler; the process is about to end */
  discardSync(): void;
}

function tempNameFor(path: string): string {
  return `.${basename(path).slice(0, TEMP_NAME_BASE_MAX_CHARS)}.${randomBytes(TEMP_NAME_RANDOM_BYTES).toString('hex')}.partial`;
}

/** fsync a directory, where the platform can (some refuse to open or sync one). */
async function syncDirectory(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (e: unknown) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM' && code !== 'ENOTSUP') throw e;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

export interface AtomicFileOptions {
  /** the temporary file's name in the target's directory; default a random one (tests choose theirs) */
  tempName?: (path: string) => string;
}

/**
 * Create the temporary file for `path`. Throws NotRegularFileError when `path` exists and is not
 * a regular file, or the open's error (ENOENT: no such directory; EACCES; EEXIST when every name
 * tried was taken).
 */
export async function openAtomicFile(path: string, o: AtomicFileOptions = {}): Promise<AtomicFile> {
  assertReplaceable(path, await inspectTarget(path));
  const dir = dirname(path);
  let descriptor: number | undefined;
  let tempPath = '';
  for (let attempt = 0; descriptor === undefined; attempt++) {
    tempPath = join(dir, (o.tempName ?? tempNameFor)(path));
    try {
      descriptor = await openFdAsync(tempPath, 'wx', TEMP_FILE_MODE);
    } catch (e: unknown) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt + 1 >= TEMP_NAME_ATTEMPTS) throw e;
    }
  }
  const fd = descriptor;
  // not closed when it ends (fsync and chmod come after); destroy() closes the descriptor, once
  const stream = createWriteStream('', { fd, autoClose: false });
  let state: 'open' | 'committed' | 'discarded' = 'open';

  const closeStream = () =>
    new Promise<void>((resolve, reject) => {
      if (stream.closed) return resolve();
      stream.once('error', reject);
      stream.once('close', () => {
        stream.off('error', reject);
        resolve();
      });
      stream.destroy();
    });
  const closeQuietly = () => closeStream().catch(() => undefined);

  return {
    path,
    tempPath,
    stream,
    async commit() {
      if (state !== 'open') throw new Error(`${path}: already ${state}`);
      try {
        await new Promise<void>((resolve, reject) => {
          stream.once('error', reject);
          stream.end(() => {
            stream.off('error', reject);
            resolve();
          });
        });
        // the target as it is now: its mode, and whether it is still a file at all
        const target = await inspectTarget(path);
        assertReplaceable(path, target);
        // a new file: the mode open(2) would have given it
        await fchmodAsync(fd, target.kind === 'file' ? target.mode! : NEW_FILE_MODE & ~process.umask());
        await fsyncAsync(fd);
        await closeStream();
        await rename(tempPath, path);
        state = 'committed';
      } catch (e: unknown) {
        if (state === 'open') {
          state = 'discarded';
          await closeQuietly();
          await unlink(tempPath).catch(() => undefined);
        }
        throw e;
      }
      await syncDirectory(dir);
    },
    async discard() {
      if (state !== 'open') return;
      state = 'discarded';
      await closeQuietly();
      await unlink(tempPath).catch(() => undefined);
    },
    discardSync() {
      if (state !== 'open') return;
      state = 'discarded';
      try {
        unlinkSync(tempPath);
      } catch {
        // gone already (renamed a moment ago, or never there)
      }
    },
  };
}
