/**
 * The webhook policy (src/domain/webhooks.ts, webhook-secrets.ts, private-addresses.ts): the
 * Standard Webhooks signature as the official package verifies it, the legacy one, the backoff's
 * bounds, what counts as delivered, which URLs and addresses are refused, and how secrets are
 * written, read and sealed.
 */
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  parseSecretsKey,
  formatSecret,
  generateSecret,
  openSecret,
  parseSecret,
  sealSecret,
  secretsKeyId,
  WebhookSecretError,
} from '../../src/domain/webhook-secrets.ts';
import { privateAddressRange, privateHostLiteral } from '../../src/domain/private-addresses.ts';
import {
  deliveryHeaders,
  isDelivered,
  legacySignature,
  redactUrl,
  standardSignature,
  webhookBackoffMs,
  webhookUrlProblem,
} from '../../src/domain/webhooks.ts';

const BODY = '{"id":7,"type":"batch.completed","occurred_at":"2026-11-23T10:00:00.000Z","data":{}}';

describe('webhook signatures', () => {
  it('signs "<id>.<timestamp>.<body>" as the standardwebhooks package does, one v1 per key, space-separated', () => {
    const a = generateSecret();
    const b = generateSecret();
    const now = Math.floor(Date.now() / 1000);
    expect(standardSignature(a.key, '7', now, BODY)).toBe(new Webhook(a.text).sign('7', new Date(now * 1000), BODY));
    const headers = deliveryHeaders(
      [
        { key: b.key, legacy: false },
        { key: a.key, legacy: false },
      ],
      7,
      now,
      BODY,
    );
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': '7',
      'webhook-timestamp': String(now),
      'Videosite-Event-Id': '7',
    });
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    // a receiver holding either secret verifies; another secret does not
    expect(new Webhook(a.text).verify(BODY, headers)).toMatchObject({ id: 7 });
    expect(new Webhook(b.text).verify(BODY, headers)).toMatchObject({ id: 7 });
    expect(() => new Webhook(generateSecret().text).verify(BODY, headers)).toThrow('No matching signature');
    expect(headers['Videosite-Signature']).toBeUndefined();
  });

  it('a legacy secret also signs Videosite-Signature as before (t=<t>,v1=<hex HMAC of "<t>.<body>">), and verifies as whsec_ + base64 of its bytes', () => {
    const legacy = Buffer.from('s3cret-s3cret-s3cret');
    const hex = createHmac('sha256', 's3cret-s3cret-s3cret').update(`1795000000.${BODY}`).digest('hex');
    expect(legacySignature(legacy, 1_795_000_000, BODY)).toBe(`t=1795000000,v1=${hex}`);
    const now = Math.floor(Date.now() / 1000);
    const fresh = generateSecret();
    const headers = deliveryHeaders(
      [
        { key: fresh.key, legacy: false },
        { key: legacy, legacy: true },
      ],
      7,
      now,
      BODY,
    );
    expect(headers['Videosite-Signature']).toBe(legacySignature(legacy, now, BODY));
    expect(new Webhook(formatSecret(legacy)).verify(BODY, headers)).toMatchObject({ id: 7 });
  });
});

describe('webhook delivery policy', () => {
  it('backs off exponentially with jitter over the upper half, capped', () => {
    expect(webhookBackoffMs(1, 5_000, 600_000, 0)).toBe(2_500);
    expect(webhookBackoffMs(1, 5_000, 600_000, 0.999_999)).toBe(5_000);
    expect(webhookBackoffMs(3, 5_000, 600_000, 0)).toBe(10_000);
    for (const f of [10, 30, 1_000]) {
      expect(webhookBackoffMs(f, 5_000, 600_000, 0.5)).toBeLessThanOrEqual(600_000);
      expect(webhookBackoffMs(f, 5_000, 600_000, 0)).toBe(300_000);
    }
  });

  it('only a 2xx is delivered (a redirect is not)', () => {
    expect([200, 204, 299].map(isDelivered)).toEqual([true, true, true]);
    expect([199, 301, 302, 307, 400, 500].map(isDelivered)).toEqual([false, false, false, false, false, false]);
  });
});

describe('webhook URLs and addresses', () => {
  const open = { allowPrivate: false };
  it('http(s) only, no credentials (never shown), no private address literal unless allowed', () => {
    expect(webhookUrlProblem('https://hooks.example.com/x?y=1', open)).toBeUndefined();
    expect(webhookUrlProblem('ftp://example.com/x', open)).toContain('"ftp://example.com/x" uses ftp');
    expect(webhookUrlProblem('example.com/x', open)).toContain('is not a URL');
    for (const url of [
      'https://alice:pa55word@hooks.example.com/x',
      'https://pa55word@hooks.example.com/x',
      'https://alice:pa55word@hooks.example.com:99999/x',
      'ftp://alice:pa55word@example.com/',
    ]) {
      const problem = webhookUrlProblem(url, { allowPrivate: true })!;
      expect(problem).toContain('***@');
      expect(problem).not.toContain('pa55word');
    }
    expect(webhookUrlProblem('https://alice:pa55word@hooks.example.com/x', open)).toContain(
      'carries credentials (user:password@)',
    );
    expect(redactUrl('https://alice:pa55word@hooks.example.com/x')).toBe('https://***@hooks.example.com/x');
    expect(redactUrl('https://hooks.example.com/x')).toBe('https://hooks.example.com/x');
    for (const url of [
      'http://127.0.0.1/x',
      'http://10.0.0.8/x',
      'http://[::1]:8080/x',
      'http://localhost/x',
      'http://api.localhost/x',
      'http://0x7f.1/x',
    ]) {
      expect(webhookUrlProblem(url, open), url).toContain('--allow-private');
      expect(webhookUrlProblem(url, { allowPrivate: true }), url).toBeUndefined();
    }
  });

  it('refuses every private, loopback, link-local, shared and this-network range, in IPv4 and IPv6 forms; public addresses pass', () => {
    const refused: [string, string][] = [
      ['0.0.0.0', '0.0.0.0/8'],
      ['0.255.1.2', '0.0.0.0/8'],
      ['10.0.0.1', '10.0.0.0/8'],
      ['10.255.255.255', '10.0.0.0/8'],
      ['100.64.0.1', '100.64.0.0/10'],
      ['100.127.255.254', '100.64.0.0/10'],
      ['127.0.0.1', '127.0.0.0/8'],
      ['127.8.9.10', '127.0.0.0/8'],
      ['169.254.169.254', '169.254.0.0/16'],
      ['172.16.0.1', '172.16.0.0/12'],
      ['172.31.255.255', '172.16.0.0/12'],
      ['192.168.1.1', '192.168.0.0/16'],
      ['::1', '::1/128'],
      ['[::1]', '::1/128'],
      ['::', '::/128'],
      ['fc00::1', 'fc00::/7'],
      ['fd12:3456::1', 'fc00::/7'],
      ['fe80::1%eth0', 'fe80::/10'],
      ['febf::1', 'fe80::/10'],
      ['::ffff:127.0.0.1', '127.0.0.0/8'],
      ['::ffff:7f00:1', '127.0.0.0/8'],
      ['[::ffff:a00:1]', '10.0.0.0/8'],
      ['::ffff:169.254.169.254', '169.254.0.0/16'],
      ['::127.0.0.1', '127.0.0.0/8'],
      ['64:ff9b::192.168.0.1', '192.168.0.0/16'],
      ['0:0:0:0:0:ffff:c0a8:0101', '192.168.0.0/16'],
    ];
    for (const [address, range] of refused) expect(privateAddressRange(address), address).toContain(range);
    for (const address of [
      '8.8.8.8',
      '1.1.1.1',
      '100.63.255.255',
      '100.128.0.0',
      '172.15.255.255',
      '172.32.0.0',
      '192.167.1.1',
      '169.253.0.1',
      '11.0.0.1',
      '2606:4700::1111',
      '::ffff:8.8.8.8',
      'fec0::1',
      'fbff::1',
      'example.com',
      '',
    ]) {
      expect(privateAddressRange(address), address).toBeUndefined();
    }
    expect(privateHostLiteral('LOCALHOST')).toContain('loopback');
    expect(privateHostLiteral('hooks.example.com')).toBeUndefined();
  });
});

describe('webhook secrets', () => {
  it('are whsec_ + base64 of 24 to 64 bytes; a bad one is refused without being echoed', () => {
    const g = generateSecret();
    expect(g.text).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(parseSecret(`  ${g.text}\n`).equals(g.key)).toBe(true);
    for (const bad of [
      'hunter2-hunter2-hunter2-hunter2',
      `whsec_${Buffer.alloc(16, 7).toString('base64')}`,
      `whsec_${Buffer.alloc(65, 7).toString('base64')}`,
      'whsec_not*base64',
      'whsec_',
    ]) {
      let err: unknown;
      try {
        parseSecret(bad);
      } catch (e: unknown) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(WebhookSecretError);
      expect((err as Error).message).toContain('(value hidden)');
      expect((err as Error).message).not.toContain(bad.slice(6) || 'whsec_x');
    }
  });

  it('WEBHOOK_SECRETS_KEY is 32 bytes in hex or base64', () => {
    const key = Buffer.alloc(32, 9);
    expect(parseSecretsKey(key.toString('hex'))).toEqual(key);
    expect(parseSecretsKey(key.toString('base64'))).toEqual(key);
    expect(parseSecretsKey(key.toString('base64').replace(/=$/, ''))).toEqual(key);
    for (const bad of [
      '',
      'abc',
      Buffer.alloc(16).toString('hex'),
      Buffer.alloc(31).toString('base64'),
      Buffer.alloc(48, 0xff).toString('base64'),
    ]) {
      expect(typeof parseSecretsKey(bad)).toBe('string');
    }
  });

  it('are sealed with AES-256-GCM under the key, bound to their endpoint; without a key they are kept as they are', () => {
    const secretsKey = Buffer.alloc(32, 5);
    const { key } = generateSecret();
    const sealed = sealSecret(secretsKey, 3, key);
    expect(sealed).toMatchObject({ encryption: 'aes-256-gcm', keyId: secretsKeyId(secretsKey) });
    expect(sealed.material.includes(key)).toBe(false);
    expect(sealed.material).toHaveLength(12 + key.length + 16);
    expect(openSecret(secretsKey, 3, sealed).equals(key)).toBe(true);
    // two seals of one key differ (a fresh IV each)
    expect(sealSecret(secretsKey, 3, key).material.equals(sealed.material)).toBe(false);
    expect(() => openSecret(undefined, 3, sealed)).toThrow('WEBHOOK_SECRETS_KEY is not set');
    expect(() => openSecret(Buffer.alloc(32, 6), 3, sealed)).toThrow(
      `encrypted with key ${secretsKeyId(secretsKey)}, not with WEBHOOK_SECRETS_KEY`,
    );
    expect(() => openSecret(secretsKey, 4, sealed)).toThrow('stored for another endpoint');
    const tampered = { ...sealed, material: Buffer.from(sealed.material) };
    tampered.material[20] = tampered.material[20]! ^ 1;
    expect(() => openSecret(secretsKey, 3, tampered)).toThrow(WebhookSecretError);
    const plain = sealSecret(undefined, 3, key);
    expect(plain).toMatchObject({ encryption: 'none', keyId: null });
    expect(openSecret(undefined, 3, plain).equals(key)).toBe(true);
    expect(openSecret(secretsKey, 3, plain).equals(key)).toBe(true);
  });
});
