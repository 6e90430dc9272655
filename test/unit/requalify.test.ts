import { describe, expect, it } from 'vitest';
import type { QuarantinedItem } from '../../src/db/quarantine.ts';
import { requalify } from '../../src/pipeline/commands/replay.ts';

function quarantined(row: Partial<QuarantinedItem> & { videoId: string }): QuarantinedItem {
  return { errorCode: null, payload: null, payloadRaw: null, reason: 'set aside', reasonCode: 'schema', ...row };
}

describe('requalify: a quarantined item read again with the rules of today', () => {
  it('leaves alone what reading again cannot change: a duplicate copy, a too-large prefix, text that is not JSON, another id', () => {
    expect(requalify(quarantined({ videoId: 'v1#3', reasonCode: 'duplicate' }), 'video')).toEqual({
      skip: 'duplicate',
    });
    expect(requalify(quarantined({ videoId: 'v1', reasonCode: 'too-large' }), 'video')).toEqual({ skip: 'too-large' });
    expect(requalify(quarantined({ videoId: 'v1', payloadRaw: '{"videoId":' }), 'video')).toEqual({
      skip: 'unparsable',
    });
    expect(requalify(quarantined({ videoId: 'v1' }), 'video')).toEqual({ skip: 'unparsable' });
    expect(requalify(quarantined({ videoId: 'v1', payload: { videoId: 'v2', status: 'failed' } }), 'video')).toEqual({
      skip: 'other-id',
    });
  });

  it('gives an item that now reads as an answer its state, its old reason cleared', () => {
    const raw = { videoId: 'v1', status: 'failed', errorCode: 'not-found' };
    expect(requalify(quarantined({ videoId: 'v1', payloadRaw: JSON.stringify(raw) }), 'video')).toEqual({
      videoId: 'v1',
      state: 'failed',
      errorCode: 'not-found',
      reason: null,
      reasonCode: null,
    });
  });

  it('keeps an item still unreadable quarantined, with the reason of today', () => {
    const r = requalify(
      quarantined({ videoId: 'v1', payload: { videoId: 'v1', status: 'bogus' }, reasonCode: 'old' }),
      'video',
    );
    expect(r).toMatchObject({ videoId: 'v1', state: 'quarantined' });
    expect('skip' in r ? undefined : r.reasonCode).not.toBe('old');
  });
});
