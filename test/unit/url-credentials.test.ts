/**
 * A URL's credentials in errors and logs (issue #27): the password is shown as `***`, however the
 * URL is written, and a bad DATABASE_URL, REDIS_URL or API_BASE_URL is named without it.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { redactUrl, redactUrlsIn, urlWithoutPassword } from '../../src/url-credentials.ts';

describe('URL credentials', () => {
  it('redactUrl hides the password of a URL value, however it is written', () => {
    expect(redactUrl('postgres://ingest:s3cret@db.example:5432/corpus')).toBe(
      'postgres://ingest:***@db.example:5432/corpus',
    );
    expect(redactUrl('postgres://ingest:s3/cr#e?t@x@db.example/corpus')).toBe(
      'postgres://ingest:***@db.example/corpus',
    );
    expect(redactUrl('redis://:s3cret@cache:6379')).toBe('redis://:***@cache:6379');
    expect(redactUrl('https://token123@api.example/v1')).toBe('https://***@api.example/v1');
    expect(redactUrl('postgres://ingest@db.example/corpus')).toBe('postgres://ingest@db.example/corpus');
    expect(redactUrl('postgres://db.example/corpus')).toBe('postgres://db.example/corpus');
    expect(redactUrl('not a url: user:pw@host')).toBe('not a url: user:pw@host');
  });

  it('redactUrlsIn hides the password of every URL in a message', () => {
    expect(redactUrlsIn('connect to "postgres://u:p1@h/db" failed, then redis://:p2@r:6379 too')).toBe(
      'connect to "postgres://u:***@h/db" failed, then redis://:***@r:6379 too',
    );
    expect(redactUrlsIn('no URL here')).toBe('no URL here');
  });

  it('a bad DATABASE_URL, REDIS_URL or API_BASE_URL is named with its password as ***', () => {
    for (const [variable, value] of [
      ['DATABASE_URL', 'mysql://u:s3cret@h/db'],
      ['REDIS_URL', 'http://:s3cret@h:6379'],
      ['API_BASE_URL', 'http://u:s3cret@h/v2'],
    ] as const) {
      let message = '';
      try {
        loadConfig({ [variable]: value });
      } catch (e: unknown) {
        message = (e as Error).message;
      }
      expect(message).toMatch(new RegExp(`^${variable}: invalid value ".*:\\*\\*\\*@h`));
      expect(message).not.toContain('s3cret');
    }
  });
});

describe('urlWithoutPassword', () => {
  it('drops the password of a URL a hint suggests, and redacts one that does not parse', () => {
    expect(urlWithoutPassword('postgres://ingest:s3cret@db.example:5432/corpus_demo')).toBe(
      'postgres://ingest@db.example:5432/corpus_demo',
    );
    expect(urlWithoutPassword('postgres://ingest@db.example/corpus')).toBe('postgres://ingest@db.example/corpus');
    expect(urlWithoutPassword('postgres://ingest:s3/cr#et@db.example/corpus')).toBe(
      'postgres://ingest:***@db.example/corpus',
    );
  });
});

describe('logs', () => {
  it('an error logged with a URL in its message or stack shows the password as ***', () => {
    let text = '';
    const log = createLogger({ destination: { write: (chunk: string) => void (text += chunk) } });
    log.error(
      { event: 'worker.error', err: new Error('cannot reach redis://:s3cret@cache:6379 (refused)') },
      'worker error',
    );
    log.warn({ event: 'redis.error', err: { message: 'postgres://u:s3cret@h/db is down' } }, 'redis connection error');
    expect(text).toContain('redis://:***@cache:6379');
    expect(text).toContain('postgres://u:***@h/db');
    expect(text).not.toContain('s3cret');
  });
});
