/**
 * The admin server's request guard as functions (src/admin/request-guard.ts): which Host names
 * it answers to, and which state-changing requests a page of another site could have sent.
 * test/integration/admin-safety.test.ts sends the same requests on the wire.
 */
import { describe, expect, it } from 'vitest';
import { allowedHostNames, crossSiteReason, hostAllowed, hostNameOf } from '../../src/admin/request-guard.ts';

const names = allowedHostNames(['admin.example.com', 'OPS.internal']);

function req(method: string, headers: Record<string, string>, host = '127.0.0.1:9464') {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { method, host, header: (name: string) => lower[name] };
}

describe('Host', () => {
  it('reads the name of a Host header, with or without a port, IPv6 in brackets', () => {
    expect(hostNameOf('LocalHost:9464')).toBe('localhost');
    expect(hostNameOf('admin.example.com')).toBe('admin.example.com');
    expect(hostNameOf('[::1]:9464')).toBe('::1');
    expect(hostNameOf('[::1]')).toBe('::1');
    for (const bad of ['', 'a:b', 'a:99999', '::1', '[evil.example]:1', 'a b:1', 'user@host:1'])
      expect(hostNameOf(bad), bad).toBeUndefined();
  });

  it('answers to localhost, IP addresses and the names given; nothing else', () => {
    for (const ok of [
      'localhost:9464',
      '127.0.0.1:9464',
      '127.0.0.2',
      '[::1]:9464',
      '10.0.0.5:80',
      '[fe80::1]:1',
      'admin.example.com',
      'ops.internal:443',
    ]) {
      expect(hostAllowed(ok, names), ok).toBe(true);
    }
    for (const no of [
      'evil.example:9464',
      'admin.example.com.evil.example',
      'localhost.evil.example:9464',
      'example.com',
      '127.0.0.1.nip.io',
      'localhost.',
      '',
    ]) {
      expect(hostAllowed(no, names), no).toBe(false);
    }
  });
});

describe('cross-site requests', () => {
  it('reads are never refused', () => {
    for (const method of ['GET', 'HEAD', 'OPTIONS']) {
      expect(
        crossSiteReason(req(method, { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' })),
      ).toBeUndefined();
    }
  });

  it('refuses what another site sent: Sec-Fetch-Site, a foreign or null Origin', () => {
    expect(crossSiteReason(req('PUT', { 'sec-fetch-site': 'cross-site' }))).toMatch(/Sec-Fetch-Site: cross-site/);
    expect(crossSiteReason(req('PUT', { 'sec-fetch-site': 'same-site' }))).toMatch(/Sec-Fetch-Site: same-site/);
    expect(crossSiteReason(req('PUT', { origin: 'https://evil.example' }))).toMatch(/another origin/);
    expect(crossSiteReason(req('PUT', { origin: 'null' }))).toMatch(/another origin/);
    expect(crossSiteReason(req('PUT', { origin: 'http://127.0.0.1:9465' }))).toMatch(/another origin/);
    expect(crossSiteReason(req('PUT', { origin: 'https://127.0.0.1:9464' }, '127.0.0.1:9464'))).toBeUndefined();
    expect(crossSiteReason(req('PUT', { origin: 'http://localhost' }, 'localhost:80'))).toBeUndefined();
    expect(
      crossSiteReason(req('PUT', { origin: 'http://127.0.0.1:9464', 'sec-fetch-site': 'same-origin' })),
    ).toBeUndefined();
  });

  it('refuses a POST a form could send, whatever credentials ride along; accepts what needs a preflight', () => {
    const basic = { authorization: 'Basic YTpi' };
    for (const type of [
      undefined,
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'Multipart/Form-Data; boundary=x',
    ]) {
      const headers = type === undefined ? basic : { ...basic, 'content-type': type };
      expect(crossSiteReason(req('POST', headers)), String(type)).toMatch(/form/);
    }
    expect(crossSiteReason(req('POST', { ...basic, 'content-type': 'application/json' }))).toBeUndefined();
    expect(crossSiteReason(req('POST', { authorization: 'Bearer x', 'content-type': 'text/plain' }))).toBeUndefined();
    expect(crossSiteReason(req('POST', { ...basic, 'x-requested-with': 'XMLHttpRequest' }))).toBeUndefined();
    for (const method of ['PUT', 'PATCH', 'DELETE'])
      expect(crossSiteReason(req(method, basic)), method).toBeUndefined();
  });
});
