/**
 * Which failed batch POSTs may have created their batch anyway (answer lost: never submitted
 * again without checking the credits) and which certainly did not (refused, or never sent).
 */
import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  InternalError,
  InvalidRequestError,
  LimitExceededError,
  NetworkError,
  SchemaMismatchError,
  TimeoutError,
  UnauthorizedError,
  UpgradeRequiredError,
} from '../../src/api/errors.ts';
import { answerMayBeLost } from '../../src/pipeline/ingest/submit.ts';

const init = { message: 'POST /videosite/video/batch: failed', endpoint: 'POST /videosite/video/batch' };
const withCode = (code: string) => Object.assign(new Error(code), { code });

describe('answerMayBeLost', () => {
  it.each([
    ['a reset after the request went out', new NetworkError({ ...init, cause: withCode('ECONNRESET') })],
    ['no answer in time', new TimeoutError({ ...init, cause: withCode('UND_ERR_HEADERS_TIMEOUT') })],
    ['a body cut short', new TimeoutError({ ...init, cause: withCode('UND_ERR_BODY_TIMEOUT') })],
    ['an abort mid-request', new AbortedError(init)],
    ['a 2xx whose job ID cannot be read', new SchemaMismatchError({ ...init, status: 200, rawBody: '{"job":1}' })],
    ['a gateway page', new InternalError({ ...init, status: 502, rawBody: '<html>502</html>' })],
    ['anything not from the client', new TypeError('boom')],
  ])('may be lost: %s', (_, e) => {
    expect(answerMayBeLost(e)).toBe(true);
  });

  it.each([
    ['connection refused', new NetworkError({ ...init, notSent: true, cause: withCode('ECONNREFUSED') })],
    ['a connect timeout', new TimeoutError({ ...init, cause: withCode('UND_ERR_CONNECT_TIMEOUT') })],
    ['the API refused the key', new UnauthorizedError({ ...init, status: 401 })],
    ['the plan has no batches', new UpgradeRequiredError({ ...init, status: 402 })],
    ['credits used up', new LimitExceededError({ ...init, status: 429 })],
    ['the API said internal-error in its own words', new InternalError({ ...init, status: 500 })],
    ['a request invalid before sending', new InvalidRequestError({ ...init, path: 'videoIds' })],
  ])('certainly not created: %s', (_, e) => {
    expect(answerMayBeLost(e)).toBe(false);
  });
});
