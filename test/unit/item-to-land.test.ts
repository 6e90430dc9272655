import { describe, expect, it } from 'vitest';
import type { ItemState } from '../../src/domain/items.ts';
import { itemToLand } from '../../src/pipeline/ingest/poll-batch.ts';

type Known = Map<string, { state: ItemState; errorCode: string | null }>;

function answer(known: Known = new Map()) {
  return { seen: new Set<string>(), known };
}

function element(value: unknown, index: number) {
  return { value, raw: JSON.stringify(value), index };
}

const failedItem = (videoId: string) => ({ videoId, status: 'failed', errorCode: 'not-found' });

describe('itemToLand: what one element of a batch answer lands as', () => {
  it('lands an item seen for the first time', () => {
    const result = { duplicates: 0 };
    const landing = itemToLand(element(failedItem('vid1'), 0), answer(), 'video', 1_000_000, result);
    expect(landing?.row.videoId).toBe('vid1');
    expect(landing?.row.payloadRaw).toBe(JSON.stringify(failedItem('vid1')));
    expect(result.duplicates).toBe(0);
  });

  it('keeps a repeated videoId raw under <videoId>#<index>, quarantined as a duplicate, and counts it', () => {
    const seen = answer();
    const result = { duplicates: 0 };
    itemToLand(element(failedItem('vid1'), 0), seen, 'video', 1_000_000, result);
    const repeat = itemToLand(element(failedItem('vid1'), 3), seen, 'video', 1_000_000, result);
    expect(repeat?.row).toMatchObject({ videoId: 'vid1#3', state: 'quarantined', reasonCode: 'duplicate' });
    expect(result.duplicates).toBe(1);
  });

  it('skips an item recorded for good by an earlier poll, and a set-aside one unchanged since', () => {
    const known: Known = new Map([
      ['done', { state: 'failed', errorCode: 'not-found' }],
      ['odd', { state: 'quarantined', errorCode: null }],
    ]);
    const seen = answer(known);
    const result = { duplicates: 0 };
    expect(itemToLand(element(failedItem('done'), 0), seen, 'video', 1_000_000, result)).toBeUndefined();
    expect(seen.seen.has('done')).toBe(true);
    // an answer whose status this interface does not list is set aside (quarantined) again: unchanged, not rewritten
    expect(
      itemToLand(element({ videoId: 'odd', status: 'bogus' }, 1), seen, 'video', 1_000_000, result),
    ).toBeUndefined();
    // the same element, now carrying an error code: changed, so written
    const changed = itemToLand(element(failedItem('odd'), 2), answer(known), 'video', 1_000_000, result);
    expect(changed?.row).toMatchObject({ videoId: 'odd', state: 'failed', errorCode: 'not-found' });
  });

  it('quarantines an oversize element unparsed, under the videoId read from its start', () => {
    const landing = itemToLand(
      { value: undefined, raw: '{"videoId":"big1","tr', index: 7, oversize: { bytes: 5_000_000, videoId: 'big1' } },
      answer(),
      'transcript',
      1_000_000,
      { duplicates: 0 },
    );
    expect(landing?.row).toMatchObject({ videoId: 'big1', state: 'quarantined', reasonCode: 'too-large' });
    expect(landing?.row.payloadRaw).toBe('{"videoId":"big1","tr');
  });
});
