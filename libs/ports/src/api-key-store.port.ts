import type { ApiScope, RateLimit } from '@rag/contracts';

/** A stored API key: only the sha256 digest of the secret is kept. */
export interface ApiKeyRecord {
  id: string;
  name: string | null;
  tenant: string;
  scopes: ApiScope[];
  groups: string[];
  unrestricted: boolean;
  rate_limit: RateLimit | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface NewApiKeyRecord {
  id: string;
  /** sha256 of the whole key, hex. */
  digest: string;
  name?: string;
  tenant: string;
  scopes: ApiScope[];
  groups?: string[];
  unrestricted?: boolean;
  rate_limit?: RateLimit;
}

export interface ApiKeyStore {
  insert(key: NewApiKeyRecord): Promise<ApiKeyRecord>;
  /** The active (not revoked) key with this digest, or null. */
  findByDigest(digest: string): Promise<ApiKeyRecord | null>;
  get(id: string): Promise<ApiKeyRecord | null>;
  list(opts?: { tenant?: string; includeRevoked?: boolean }): Promise<ApiKeyRecord[]>;
  /** Revokes a key (of `tenant` when given); returns it, or null when there is no such key. Idempotent. */
  revoke(id: string, tenant?: string): Promise<ApiKeyRecord | null>;
  /** Records that a key was used (callers throttle this). */
  touch(id: string, at: string): Promise<void>;
  countActive(): Promise<number>;
  /**
   * True once any key has ever been stored, even when every key is revoked since (a marker the store keeps, set with
   * the first insert and never cleared). The anonymous local mode is closed for good by it: revoking the last key must
   * not re-open every scope to anyone on the machine.
   */
  keysEverIssued(): Promise<boolean>;
  close(): Promise<void>;
}
export const API_KEY_STORE = Symbol('API_KEY_STORE');
