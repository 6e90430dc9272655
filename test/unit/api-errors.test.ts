import { describe, expect, it } from 'vitest';
import {
  ApiError,
  errorFromResponse,
  ForbiddenError,
  GatewayForbiddenError,
  InternalError,
  NotFoundError,
  RAW_BODY_PREFIX_CHARS,
  SchemaMismatchError,
  TimeoutError,
} from '../../src/api/errors.ts';

const endpoint = 'GET /videosite/batch/{jobId}';

describe('errorFromResponse: a JSON not-found and a gateway 404', () => {
  it('a valid Error object: NotFoundError with errorBody and no rawBody', () => {
    const e = errorFromResponse({
      status: 404,
      body: JSON.stringify({ error: 'not-found', message: 'Job not found.', details: 'no such job' }),
      endpoint,
    });
    expect(e).toBeInstanceOf(NotFoundError);
    expect(e.errorBody).toBe(true);
    expect(e.rawBody).toBeUndefined();
    expect(e.details).toBe('no such job');
  });

  it.each([
    ['an HTML page', '<html><body>404 Not Found</body></html>'],
    ['a bare text', 'Not Found'],
    ['an empty body', ''],
    ['JSON that is not an Error object', '{"message":"Not Found"}'],
    ['an Error object with an unknown shape', '{"error":"not-found"}'],
  ])('%s: NotFoundError without errorBody, the body in rawBody', (_, body) => {
    const e = errorFromResponse({ status: 404, body, endpoint });
    expect(e).toBeInstanceOf(NotFoundError);
    expect(e.errorBody).toBe(false);
    expect(e.rawBody).toBe(body);
  });

  it('local errors never claim an Error body', () => {
    expect(new TimeoutError({ message: 'x' }).errorBody).toBe(false);
  });
});

describe('errorFromResponse: a 403 is a restricted video only when the API says so', () => {
  it('the interface Error object: ForbiddenError', () => {
    const e = errorFromResponse({
      status: 403,
      body: JSON.stringify({ error: 'forbidden', message: 'The video is private.', details: 'x' }),
      endpoint,
    });
    expect(e).toBeInstanceOf(ForbiddenError);
    expect(e.code).toBe('forbidden');
  });

  it.each([
    ['a gateway page', '<html><body><h1>403 Forbidden</h1></body></html>'],
    ['an empty body', ''],
    ['JSON that is not an Error object', '{"message":"Forbidden"}'],
  ])('%s: GatewayForbiddenError (code gateway-forbidden), not a ForbiddenError, the body kept', (_, body) => {
    const e = errorFromResponse({ status: 403, body, endpoint });
    expect(e).toBeInstanceOf(GatewayForbiddenError);
    expect(e).not.toBeInstanceOf(ForbiddenError);
    expect(e.code).toBe('gateway-forbidden');
    expect(e.status).toBe(403);
    expect(e.errorBody).toBe(false);
    expect(e.rawBody).toBe(body);
  });
});

describe('ApiError.rawBody', () => {
  it('keeps only a prefix of a long body, and says so', () => {
    const body = `<html>${'x'.repeat(1_000_000)}</html>`;
    const e = errorFromResponse({ status: 502, body, endpoint });
    expect(e).toBeInstanceOf(InternalError);
    expect(e.rawBody).toBe(body.slice(0, RAW_BODY_PREFIX_CHARS));
    expect(e.rawBodyTruncated).toBe(true);
    expect(e.message.length).toBeLessThan(400);
    const json = JSON.stringify(e.toJSON());
    expect(json.length).toBeLessThan(RAW_BODY_PREFIX_CHARS + 1_000);
  });

  it('keeps a short body whole', () => {
    const e = new SchemaMismatchError({ message: 'x', rawBody: '{"a":1}' });
    expect(e.rawBody).toBe('{"a":1}');
    expect(e.rawBodyTruncated).toBe(false);
  });

  it('never ends in half a surrogate pair', () => {
    const body = `${'a'.repeat(RAW_BODY_PREFIX_CHARS - 1)}\u{1F3AE}tail`;
    const e = new ApiError('schema-mismatch', { message: 'x', rawBody: body });
    expect(e.rawBody).toBe('a'.repeat(RAW_BODY_PREFIX_CHARS - 1));
  });
});
