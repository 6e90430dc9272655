/**
 * The admin server's settings (issue #27): ADMIN_ALLOWED_HOSTS is a list of host names, each
 * checked; METRICS_TOKEN is a secret like ADMIN_TOKEN (length checked, value never echoed).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { configErrorOf } from '../helpers/config.ts';

describe('admin settings', () => {
  it('reads ADMIN_ALLOWED_HOSTS as lower-case host names, comma-separated; none by default', () => {
    expect(
      loadConfig({ ADMIN_ALLOWED_HOSTS: 'Admin.Example.com, ops-1.internal ,localhost' }).admin.allowedHosts,
    ).toEqual(['admin.example.com', 'ops-1.internal', 'localhost']);
    expect(loadConfig({}).admin.allowedHosts).toEqual([]);
  });

  it('names the bad item of ADMIN_ALLOWED_HOSTS and says what a valid one is', () => {
    for (const [list, item] of [
      ['admin.example.com,https://x.example', 'https://x.example'],
      ['admin.example.com:8443', 'admin.example.com:8443'],
      ['a..b', 'a..b'],
      ['a,,b', ''],
      ['*.example.com', '*.example.com'],
    ] as const) {
      const m = configErrorOf({ ADMIN_ALLOWED_HOSTS: list });
      expect(m).toMatch(/^ADMIN_ALLOWED_HOSTS: /);
      expect(m).toContain(`invalid item ${JSON.stringify(item)}`);
      expect(m).toContain('host name');
    }
  });

  it('METRICS_TOKEN: at least 16 printable characters, never echoed', () => {
    expect(loadConfig({ METRICS_TOKEN: 'metrics-token-0123456789' }).admin.metricsToken).toBe(
      'metrics-token-0123456789',
    );
    expect(loadConfig({}).admin.metricsToken).toBeUndefined();
    const m = configErrorOf({ METRICS_TOKEN: 'short' });
    expect(m).toBe('METRICS_TOKEN: invalid value (value hidden): expected at least 16 characters');
  });
});
