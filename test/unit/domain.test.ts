/**
 * The policy of src/domain/: what an item outcome means, when a video is due again, how a batch
 * head is read. Pure functions, table-driven.
 */
import { describe, expect, it } from 'vitest';
import {
  dueReason,
  recheckAt,
  retrySpacingMs,
  type DuePolicy,
  type VideoSyncFacts,
} from '../../src/domain/attempts.ts';
import { readHead, storableDate } from '../../src/domain/batches.ts';
import { findUnstorableNumber } from '../../src/db/storable.ts';
import { classifyItem } from '../../src/domain/items.ts';
import { classifyRawItem } from '../../src/domain/raw-items.ts';

const NOW = new Date('2026-06-01T12:00:00Z');
const policy: DuePolicy = {
  now: NOW,
  retryAttemptsMax: 3,
  retryBackoffBaseMs: 600_000,
  wantsChunks: true,
  refreshAfterMs: null,
};
const facts = (f: Partial<VideoSyncFacts>): VideoSyncFacts => ({
  lastState: 'sunk',
  lastErrorCode: null,
  attempts: 1,
  nextCheckAt: null,
  updatedAt: new Date(NOW.getTime() - 60_000),
  claimPending: false,
  claimEnded: false,
  lastTextOnly: false,
  hasChunks: true,
  askedLangAppeared: false,
  ...f,
});
const minutesAgo = (m: number) => new Date(NOW.getTime() - m * 60_000);

describe('item outcomes', () => {
  const video = {
    id: 'v1',
    title: 't',
    description: '',
    duration: 1,
    channel: { id: 'c', name: 'n' },
    tags: [],
    transcriptLanguages: [],
  };
  it.each([
    [{ videoId: 'v1', video, errorCode: null }, 'landed', null],
    [{ videoId: 'v1', errorCode: 'processing' }, 'processing', 'processing'],
    [{ videoId: 'v1', errorCode: 'transcript-unavailable' }, 'failed', 'transcript-unavailable'],
    [{ videoId: 'v1', errorCode: 'not-found' }, 'failed', 'not-found'],
    [{ videoId: 'v1', errorCode: 'forbidden' }, 'failed', 'forbidden'],
    [{ videoId: 'v1', errorCode: 'invalid-request' }, 'failed', 'invalid-request'],
    [{ videoId: 'v1', errorCode: 'internal-error' }, 'retryable', 'internal-error'],
    [{ videoId: 'v1', errorCode: 'result-unavailable' }, 'retryable', 'result-unavailable'],
    [{ videoId: 'v1', errorCode: 'limit-exceeded' }, 'retryable', 'limit-exceeded'],
    // a code this interface version does not list: recorded exactly, retryable
    [{ videoId: 'v1', errorCode: 'quota-shifted' }, 'retryable', 'quota-shifted'],
    [{ videoId: 'v1', errorCode: null }, 'quarantined', null],
  ])('%j is %s', (item, state, code) => {
    const o = classifyRawItem(item, 'video');
    expect(o.state).toBe(state);
    expect(o.errorCode).toBe(code);
  });

  it('an item that fails the schema is quarantined with the path, its errorCode kept', () => {
    const o = classifyRawItem({ videoId: 'v1', video: { ...video, title: null }, errorCode: 'x' }, 'video');
    expect(o.state).toBe('quarantined');
    expect(o.reasonCode).toBe('schema');
    expect(o.reason).toMatch(/video\.title/);
    expect(o.errorCode).toBe('x');
  });

  it('a transcript item without a transcript and without a code is set aside', () => {
    expect(classifyItem({ videoId: 'v', transcript: null }, 'transcript')).toMatchObject({
      state: 'quarantined',
      reasonCode: 'no-result',
    });
  });
});

describe('when a video is due', () => {
  it('never submitted: due', () => {
    expect(dueReason(undefined, policy)).toBe('new');
  });
  it('delivered: not due, whichever source asks', () => {
    expect(dueReason(facts({ lastState: 'sunk' }), policy)).toBeNull();
    expect(dueReason(facts({ lastState: 'landed' }), policy)).toBeNull();
  });
  it('claimed by a batch in flight or an undecided POST: not due', () => {
    expect(dueReason(facts({ lastState: 'processing', claimPending: true }), policy)).toBeNull();
  });
  it('claimed by a batch that ended without it: retryable within the cap', () => {
    expect(dueReason(facts({ lastState: 'processing', claimEnded: true, attempts: 1 }), policy)).toBe('retry');
    expect(dueReason(facts({ lastState: 'processing', claimEnded: true, attempts: 3 }), policy)).toBeNull();
  });
  it('retryable: the first re-submission at the next sync, later ones spaced, none past the cap', () => {
    expect(dueReason(facts({ lastState: 'retryable', attempts: 1, updatedAt: NOW }), policy)).toBe('retry');
    expect(dueReason(facts({ lastState: 'retryable', attempts: 2, updatedAt: minutesAgo(9) }), policy)).toBeNull();
    expect(dueReason(facts({ lastState: 'retryable', attempts: 2, updatedAt: minutesAgo(10) }), policy)).toBe('retry');
    expect(dueReason(facts({ lastState: 'retryable', attempts: 3, updatedAt: minutesAgo(10_000) }), policy)).toBeNull();
  });
  it('spacing doubles', () => {
    expect([1, 2, 3, 4].map((n) => retrySpacingMs(n, 1000))).toEqual([0, 1000, 2000, 4000]);
  });
  it('quarantined or permanently failed: never automatically', () => {
    expect(dueReason(facts({ lastState: 'quarantined', attempts: 1 }), policy)).toBeNull();
    expect(dueReason(facts({ lastState: 'failed', lastErrorCode: 'not-found' }), policy)).toBeNull();
  });
  it('transcript-unavailable: re-checked when its time has come, within the cap', () => {
    const at = recheckAt('transcript-unavailable', minutesAgo(60), 30 * 60_000);
    expect(at).not.toBeNull();
    expect(
      dueReason(facts({ lastState: 'failed', lastErrorCode: 'transcript-unavailable', nextCheckAt: at }), policy),
    ).toBe('recheck');
    expect(dueReason(facts({ lastState: 'failed', nextCheckAt: at, attempts: 3 }), policy)).toBeNull();
    expect(recheckAt('not-found', NOW, 1000)).toBeNull();
  });
  it('a source that wants chunks buys a plain-text-only transcript once; a --text source never downgrades', () => {
    const plain = facts({ lastState: 'sunk', lastTextOnly: true, hasChunks: false });
    expect(dueReason(plain, policy)).toBe('chunks');
    expect(dueReason(plain, { ...policy, wantsChunks: false })).toBeNull();
    // bought with chunks since (the last purchase was not text-only): not again
    expect(dueReason(facts({ lastState: 'sunk', lastTextOnly: false, hasChunks: false }), policy)).toBeNull();
    expect(dueReason(facts({ lastState: 'sunk', lastTextOnly: true, hasChunks: true }), policy)).toBeNull();
  });
  it('a transcript that fell back is bought again only when its language has appeared, even in flight never', () => {
    expect(dueReason(facts({ lastState: 'sunk', askedLangAppeared: true }), policy)).toBe('language');
    expect(dueReason(facts({ lastState: 'landed', askedLangAppeared: true }), policy)).toBe('language');
    expect(dueReason(facts({ lastState: 'sunk', askedLangAppeared: false }), policy)).toBeNull();
    expect(dueReason(facts({ lastState: 'sunk', askedLangAppeared: true, claimPending: true }), policy)).toBeNull();
  });
  it('a stored or gone video is fetched again only when the source asked for a refresh, once its latest outcome is that old', () => {
    const day = 24 * 3600_000;
    const weekly = { ...policy, refreshAfterMs: 7 * day };
    const stored = (ageMs: number, f: Partial<VideoSyncFacts> = {}) =>
      facts({ updatedAt: new Date(NOW.getTime() - ageMs), ...f });
    expect(dueReason(stored(8 * day), policy)).toBeNull();
    expect(dueReason(stored(8 * day), weekly)).toBe('refresh');
    expect(dueReason(stored(7 * day), weekly)).toBe('refresh');
    expect(dueReason(stored(6 * day), weekly)).toBeNull();
    expect(dueReason(stored(8 * day, { lastState: 'landed' }), weekly)).toBe('refresh');
    // gone or private: only a refresh asks again; other permanent failures never
    expect(dueReason(stored(8 * day, { lastState: 'failed', lastErrorCode: 'not-found' }), weekly)).toBe('refresh');
    expect(dueReason(stored(8 * day, { lastState: 'failed', lastErrorCode: 'forbidden' }), weekly)).toBe('refresh');
    expect(dueReason(stored(8 * day, { lastState: 'failed', lastErrorCode: 'not-found' }), policy)).toBeNull();
    expect(dueReason(stored(1000, { lastState: 'failed', lastErrorCode: 'not-found' }), weekly)).toBeNull();
    expect(dueReason(stored(8 * day, { lastState: 'failed', lastErrorCode: 'invalid-request' }), weekly)).toBeNull();
    // `backfill --refresh`: now; but never what is in flight or set aside
    const now = { ...policy, refreshAfterMs: 0 };
    expect(dueReason(stored(0), now)).toBe('refresh');
    expect(dueReason(stored(0, { claimPending: true }), now)).toBeNull();
    expect(dueReason(stored(0, { lastState: 'quarantined' }), now)).toBeNull();
    expect(dueReason(stored(0, { lastState: 'processing' }), now)).toBeNull();
  });
});

describe('batch heads, read liberally', () => {
  it('known statuses map; job-expired wins', () => {
    expect(readHead({ status: 'completed' })).toEqual({ status: 'completed', unknownStatus: null, terminal: true });
    expect(readHead({ status: 'active' })).toEqual({ status: 'active', unknownStatus: null, terminal: false });
    expect(readHead({ status: 'failed', errorCode: 'job-expired' })).toMatchObject({
      status: 'expired',
      terminal: true,
    });
  });
  it('an unknown status keeps the batch in flight and is recorded', () => {
    expect(readHead({ status: 'cancelled' })).toEqual({ status: null, unknownStatus: 'cancelled', terminal: false });
  });
  it('a date Postgres cannot hold is dropped, not fatal', () => {
    expect(storableDate('0000-01-01T00:00:00Z')).toBeNull();
    expect(storableDate('not a date')).toBeNull();
    expect(storableDate('2026-01-01T00:00:00Z')?.toISOString()).toBe('2026-01-01T00:00:00.000Z');
  });
});

describe('numbers Postgres numeric cannot hold', () => {
  it.each([
    ['{"viewCount":1e200000}', '1e200000'],
    ['{"viewCount":1e-200000}', '1e-200000'],
    ['{"viewCount":-2.5E+199999}', '-2.5E+199999'],
    ['{"title":"1e200000","viewCount":3}', undefined],
    ['{"title":"say \\"1e-99999\\" twice","viewCount":0e-99999}', undefined],
    ['{"viewCount":12345678901234567890}', undefined],
  ])('%s', (text, bad) => {
    expect(findUnstorableNumber(text)).toBe(bad);
  });
});
