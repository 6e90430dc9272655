/**
 * The API client built from the configuration: the one place that joins `src/api/` (a library
 * that takes options) and `src/config.ts`.
 */
import { createApiClient, type ApiClient, type ApiClientOptions } from './api/client.ts';
import { ConfigError, type Config } from './config.ts';
import type { Logger } from './log.ts';

/** The client from `config.api`; a missing base URL or key is a ConfigError naming the variable. */
export function createApiClientFromConfig(
  api: Config['api'],
  log?: Logger,
  extra: Omit<
    ApiClientOptions,
    | 'baseUrl'
    | 'apiKey'
    | 'platform'
    | 'connectTimeoutMs'
    | 'headersTimeoutMs'
    | 'bodyTimeoutMs'
    | 'requestTimeoutMs'
    | 'retry'
    | 'retryAfterMaxMs'
    | 'maxBodyBytes'
    | 'log'
  > = {},
): ApiClient {
  if (api.baseUrl === undefined) throw new ConfigError('API_BASE_URL', 'is required (a base URL ending in /v1)');
  if (api.apiKey === undefined) throw new ConfigError('API_KEY', 'is required');
  return createApiClient({
    ...extra,
    baseUrl: api.baseUrl,
    apiKey: api.apiKey,
    platform: api.platform,
    connectTimeoutMs: api.connectTimeoutMs,
    headersTimeoutMs: api.headersTimeoutMs,
    bodyTimeoutMs: api.bodyTimeoutMs,
    requestTimeoutMs: api.requestTimeoutMs,
    retry: api.retry,
    retryAfterMaxMs: api.retryAfterMaxMs,
    maxBodyBytes: api.maxBodyBytes,
    log,
  });
}
