/**
 * Webhook signing secrets: their text form, how they are kept in Postgres, and their
 * encryption at rest. A secret is a key of 24 to 64 bytes, written the Standard Webhooks way,
 * `whsec_<base64 of the key>`; a generated one has WEBHOOK_SECRET_BYTES random bytes. A secret of
 * an endpoint added before Standard Webhooks (`legacy`) is the UTF-8 bytes of the string that was
 * given or generated then; it also signs the old `Videosite-Signature` header. Stored keys are
 * sealed with AES-256-GCM under WEBHOOK_SECRETS_KEY when one is configured, else kept as they are.
 * Pure (node:crypto only): the repositories store what `sealSecret` returns.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Bytes of a generated secret's key. */
export const WEBHOOK_SECRET_BYTES = 32;
/** A secret's key length, bytes: the Standard Webhooks specification's bounds. */
export const WEBHOOK_SECRET_MIN_BYTES = 24;
export const WEBHOOK_SECRET_MAX_BYTES = 64;

/** `whsec`: a Standard Webhooks secret; `legacy`: from before it (also signs Videosite-Signature). */
export const SECRET_FORMATS = ['whsec', 'legacy'] as const;
export type SecretFormat = (typeof SECRET_FORMATS)[number];

/** How `webhook_secrets.material` holds the key. */
export const SECRET_ENCRYPTIONS = ['none', 'aes-256-gcm'] as const;
export type SecretEncryption = (typeof SECRET_ENCRYPTIONS)[number];

/** How long the secrets a rotation replaces keep signing, by default, ms (24 h). */
export const WEBHOOK_ROTATION_GRACE_MS = 24 * 3_600_000;

/** A key as `webhook_secrets` keeps it. */
export interface StoredSecret {
  encryption: SecretEncryption;
  /** `secretsKeyId` of the key it is sealed with; null when not encrypted */
  keyId: string | null;
  /** the key (`none`), or IV (12 bytes) + ciphertext + GCM tag (16 bytes) */
  material: Buffer;
}

/** A secret that cannot be used; the message never holds the secret. */
export class WebhookSecretError extends Error {
  readonly code: 'secret-format' | 'secret-unreadable';
  constructor(code: WebhookSecretError['code'], message: string) {
    super(message);
    this.name = 'WebhookSecretError';
    this.code = code;
  }
}

/** The text form of a key: `whsec_<base64>`. */
export function formatSecret(key: Buffer): string {
  return `${WEBHOOK_SECRET_PREFIX}${key.toString('base64')}`;
}

export function generateSecret(): { key: Buffer; text: string } {
  const key = randomBytes(WEBHOOK_SECRET_BYTES);
  return { key, text: formatSecret(key) };
}

/** The key of a `whsec_<base64>` secret (surrounding blanks and a final newline ignored); throws WebhookSecretError. */
export function parseSecret(text: string): Buffer {
  const t = text.trim();
  const b64 = t.startsWith(WEBHOOK_SECRET_PREFIX) ? t.slice(WEBHOOK_SECRET_PREFIX.length) : undefined;
  if (b64 === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 === 1) {
    throw new WebhookSecretError(
      'secret-format',
      `expected a Standard Webhooks secret: ${WEBHOOK_SECRET_PREFIX} followed by the base64 of ${WEBHOOK_SECRET_MIN_BYTES} to ${WEBHOOK_SECRET_MAX_BYTES} bytes (value hidden)`,
    );
  }
  const key = Buffer.from(b64, 'base64');
  if (key.length < WEBHOOK_SECRET_MIN_BYTES || key.length > WEBHOOK_SECRET_MAX_BYTES) {
    throw new WebhookSecretError(
      'secret-format',
      `expected a key of ${WEBHOOK_SECRET_MIN_BYTES} to ${WEBHOOK_SECRET_MAX_BYTES} bytes after ${WEBHOOK_SECRET_PREFIX}, got ${key.length} (value hidden)`,
    );
  }
  return key;
}

/** The 32-byte key of WEBHOOK_SECRETS_KEY, written as 64 hex digits or base64; the reason it is not one otherwise. */
export function parseSecretsKey(text: string): Buffer | string {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(t)) {
    const key = Buffer.from(t, 'base64');
    if (key.length === 32) return key;
  }
  return 'expected 32 bytes written as 64 hex digits or as base64 (e.g. the output of: openssl rand -base64 32)';
}

/** A short name of an encryption key (a hash of it, not the key), stored beside what it sealed. */
export function secretsKeyId(key: Buffer): string {
  return createHash('sha256').update('videosite-ingest webhook secrets key\0').update(key).digest('hex').slice(0, 16);
}

/** Binds a sealed key to its endpoint: a row copied to another endpoint does not open. */
const aad = (endpointId: number) => Buffer.from(`videosite-ingest webhook secret v1 endpoint ${endpointId}`);

/** How `key` is stored for `endpointId`: sealed under `secretsKey` when there is one. */
export function sealSecret(
  secretsKey: Buffer | undefined,
  endpointId: number,
  key: Buffer,
  iv: Buffer = randomBytes(12),
): StoredSecret {
  if (!secretsKey) return { encryption: 'none', keyId: null, material: Buffer.from(key) };
  const cipher = createCipheriv('aes-256-gcm', secretsKey, iv);
  cipher.setAAD(aad(endpointId));
  const sealed = Buffer.concat([iv, cipher.update(key), cipher.final(), cipher.getAuthTag()]);
  return { encryption: 'aes-256-gcm', keyId: secretsKeyId(secretsKey), material: sealed };
}

/** The key of a stored secret; throws WebhookSecretError when it is sealed and `secretsKey` cannot open it. */
export function openSecret(secretsKey: Buffer | undefined, endpointId: number, s: StoredSecret): Buffer {
  if (s.encryption === 'none') return s.material;
  if (!secretsKey) {
    throw new WebhookSecretError(
      'secret-unreadable',
      `the secret is encrypted (key ${s.keyId}) and WEBHOOK_SECRETS_KEY is not set`,
    );
  }
  const keyId = secretsKeyId(secretsKey);
  if (keyId !== s.keyId) {
    throw new WebhookSecretError(
      'secret-unreadable',
      `the secret is encrypted with key ${s.keyId}, not with WEBHOOK_SECRETS_KEY (key ${keyId})`,
    );
  }
  try {
    const m = s.material;
    const decipher = createDecipheriv('aes-256-gcm', secretsKey, m.subarray(0, 12));
    decipher.setAAD(aad(endpointId));
    decipher.setAuthTag(m.subarray(m.length - 16));
    return Buffer.concat([decipher.update(m.subarray(12, m.length - 16)), decipher.final()]);
  } catch {
    throw new WebhookSecretError(
      'secret-unreadable',
      `the secret does not decrypt with WEBHOOK_SECRETS_KEY (key ${keyId}): altered, or stored for another endpoint`,
    );
  }
}
