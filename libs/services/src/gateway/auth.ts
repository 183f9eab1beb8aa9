import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { API_SCOPES, type ApiKeyCreate, type ApiScope, type RateLimit, type SearchScope } from '@rag/contracts';
import { AppError, type AppConfig, isLoopback } from '@rag/platform';
import type { ApiKeyRecord, ApiKeyStore } from '@rag/ports';

/**
 * Who is calling, as established by {@link Authenticator}:
 *
 * - `tenant`: every read and write is confined to it (documents, chunks, API keys).
 * - `scopes`: what the key may do (`ingest`, `query`, `admin`).
 * - `principals`: the identities ACL entries are matched against — `group:<name>` for each group and `user:<sub>` for a
 *   forwarded JWT's subject; a document is readable when its ACL holds `*` or one of them. `undefined` means
 *   unrestricted inside the tenant: only the anonymous local mode, keys from RAG_API_KEYS and stored keys created
 *   with `unrestricted: true` — and never when a JWT is forwarded (then the JWT's identity is what counts).
 *   A stored key without groups that is not unrestricted reads only documents whose ACL holds `*`.
 */
export interface Principal {
  tenant: string;
  scopes: readonly ApiScope[];
  principals?: string[];
  /** `anonymous` (loopback, no keys anywhere), `env` (RAG_API_KEYS) or `stored` (the key store). */
  kind: 'anonymous' | 'env' | 'stored';
  /** Stable id of the key (`env:<digest prefix>` for RAG_API_KEYS entries); null when anonymous. */
  keyId: string | null;
  /** The JWT subject when a JWT was forwarded. */
  subject?: string;
  /** The key's own limit; undefined = the configured default. */
  rateLimit?: RateLimit;
}

/** The search scope of a principal: its tenant, and its ACL identities unless it is unrestricted. */
export const scopeOf = (p: Principal): SearchScope => ({ tenant: p.tenant, ...(p.principals !== undefined ? { principals: [...p.principals] } : {}) });

export const groupPrincipal = (group: string) => `group:${group}`;
export const userPrincipal = (subject: string) => `user:${subject}`;

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** sha256 of an API key, hex: what the key store keeps. */
export const digestApiKey = (key: string) => sha256(key).toString('hex');

/** A new key: `rag_<id>_<secret>`; the id (public, 16 hex) names it in listings and logs, the secret is 256 random bits. */
export function generateApiKey(): { id: string; key: string } {
  const id = randomBytes(8).toString('hex');
  return { id, key: `rag_${id}_${randomBytes(32).toString('base64url')}` };
}

/** Creates a key in the store and returns it once, with the secret (only its digest is kept). */
export async function issueApiKey(store: ApiKeyStore, input: ApiKeyCreate & { tenant: string }): Promise<{ record: ApiKeyRecord; key: string }> {
  const { id, key } = generateApiKey();
  const record = await store.insert({
    id,
    digest: digestApiKey(key),
    tenant: input.tenant,
    scopes: input.scopes,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.groups !== undefined ? { groups: input.groups } : {}),
    ...(input.unrestricted !== undefined ? { unrestricted: input.unrestricted } : {}),
    ...(input.rate_limit !== undefined ? { rate_limit: input.rate_limit } : {}),
  });
  return { record, key };
}

/** RAG_API_KEYS: comma-separated `key` or `key=tenant`; each is unrestricted in its tenant with every scope. */
export function parseEnvKeys(spec: string | undefined): { digest: Buffer; tenant: string; id: string }[] {
  return (spec ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const [key, tenant] = entry.split('=');
      const digest = sha256(key!.trim());
      return { digest, tenant: tenant?.trim() || 'default', id: `env:${digest.toString('hex').slice(0, 12)}` };
    });
}

export interface JwtIdentity {
  subject?: string;
  groups: string[];
  tenant?: string;
}

/**
 * Verifies the JWT the enterprise gateway forwards (jose): HS256 with RAG_JWT_SECRET, or the asymmetric algorithms
 * with keys from RAG_JWT_JWKS_URL (cached and refreshed by jose on an unknown `kid`); `exp`/`nbf` with the configured
 * clock tolerance, and `iss`/`aud` when configured. Symmetric and asymmetric algorithms are never mixed, so a token
 * signed with a public key used as an HMAC secret is refused.
 */
export class JwtVerifier {
  private readonly key: Uint8Array | JWTVerifyGetKey;
  private readonly algorithms: string[];

  constructor(private readonly config: Pick<AppConfig, 'RAG_JWT_SECRET' | 'RAG_JWT_JWKS_URL' | 'RAG_JWT_ISSUER' | 'RAG_JWT_AUDIENCE' | 'RAG_JWT_GROUPS_CLAIM' | 'RAG_JWT_TENANT_CLAIM' | 'RAG_JWT_CLOCK_TOLERANCE_S'>) {
    if (config.RAG_JWT_SECRET) {
      this.key = new TextEncoder().encode(config.RAG_JWT_SECRET);
      this.algorithms = ['HS256'];
    } else if (config.RAG_JWT_JWKS_URL) {
      this.key = createRemoteJWKSet(new URL(config.RAG_JWT_JWKS_URL), { timeoutDuration: 5000, cooldownDuration: 30_000 });
      this.algorithms = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
    } else {
      throw new Error('JwtVerifier needs RAG_JWT_SECRET or RAG_JWT_JWKS_URL');
    }
  }

  static fromConfig(config: AppConfig): JwtVerifier | null {
    return config.RAG_JWT_SECRET || config.RAG_JWT_JWKS_URL ? new JwtVerifier(config) : null;
  }

  async verify(token: string): Promise<JwtIdentity> {
    let payload: JWTPayload;
    try {
      const opts = {
        algorithms: this.algorithms,
        clockTolerance: this.config.RAG_JWT_CLOCK_TOLERANCE_S,
        ...(this.config.RAG_JWT_ISSUER ? { issuer: this.config.RAG_JWT_ISSUER } : {}),
        ...(this.config.RAG_JWT_AUDIENCE ? { audience: this.config.RAG_JWT_AUDIENCE } : {}),
      };
      payload =
        this.key instanceof Uint8Array ? (await jwtVerify(token, this.key, opts)).payload : (await jwtVerify(token, this.key, opts)).payload;
    } catch (e) {
      throw new AppError('unauthorized', `invalid JWT: ${jwtProblem(e)}`);
    }
    const groups = claimAt(payload, this.config.RAG_JWT_GROUPS_CLAIM);
    const groupList = groups === undefined ? [] : typeof groups === 'string' ? [groups] : groups;
    if (!Array.isArray(groupList) || !groupList.every((g): g is string => typeof g === 'string' && g.length > 0 && g.length <= 256) || groupList.length > 1000) {
      throw new AppError('unauthorized', `invalid JWT: claim "${this.config.RAG_JWT_GROUPS_CLAIM}" must be a string or an array of up to 1000 strings`);
    }
    if (payload.sub !== undefined && (typeof payload.sub !== 'string' || payload.sub.length === 0 || payload.sub.length > 256)) {
      throw new AppError('unauthorized', 'invalid JWT: `sub` must be a non-empty string');
    }
    const tenant = this.config.RAG_JWT_TENANT_CLAIM ? claimAt(payload, this.config.RAG_JWT_TENANT_CLAIM) : undefined;
    if (tenant !== undefined && typeof tenant !== 'string') throw new AppError('unauthorized', `invalid JWT: claim "${this.config.RAG_JWT_TENANT_CLAIM}" must be a string`);
    return { ...(payload.sub ? { subject: payload.sub } : {}), groups: groupList, ...(tenant !== undefined ? { tenant } : {}) };
  }
}

function jwtProblem(e: unknown): string {
  if (e instanceof joseErrors.JWTExpired) return 'expired';
  if (e instanceof joseErrors.JWTClaimValidationFailed) return `claim ${e.claim} ${e.reason === 'check_failed' ? 'does not match' : e.reason}`;
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) return 'bad signature';
  if (e instanceof joseErrors.JOSEAlgNotAllowed) return 'algorithm not allowed';
  if (e instanceof joseErrors.JWKSNoMatchingKey) return 'no matching key in the JWKS';
  if (e instanceof joseErrors.JWKSTimeout || e instanceof joseErrors.JWKSInvalid) return 'the JWKS could not be fetched';
  if (e instanceof joseErrors.JOSEError) return e.code;
  return 'malformed';
}

/** A claim by exact name (namespaced claims contain dots: `https://example.com/groups`), else by dotted path. */
function claimAt(payload: JWTPayload, name: string): unknown {
  if (Object.prototype.hasOwnProperty.call(payload, name)) return payload[name];
  let cur: unknown = payload;
  for (const part of name.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || !Object.prototype.hasOwnProperty.call(cur, part)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Establishes the {@link Principal} of a request from `Authorization: Bearer <api key>` (RAG_API_KEYS entries,
 * compared as sha256 digests in constant time, or the key store, looked up by digest) and, optionally, a JWT in
 * RAG_JWT_HEADER. Without any key configured, on loopback and with RAG_AUTH=auto, callers are the anonymous tenant
 * `default` with every scope (the local, single-user mode).
 */
export class Authenticator {
  private readonly envKeys: ReturnType<typeof parseEnvKeys>;
  private readonly touched = new Map<string, number>();

  constructor(
    private readonly config: AppConfig,
    private readonly store: ApiKeyStore,
    private readonly jwt: JwtVerifier | null = JwtVerifier.fromConfig(config),
  ) {
    this.envKeys = parseEnvKeys(config.RAG_API_KEYS);
  }

  /** Anonymous access: RAG_AUTH=auto, loopback, and no key in RAG_API_KEYS or the store (checked per request, so creating the first key closes it). */
  async anonymousAllowed(): Promise<boolean> {
    return this.config.RAG_AUTH === 'auto' && isLoopback(this.config.RAG_HOST) && this.envKeys.length === 0 && (await this.store.countActive()) === 0;
  }

  async authenticate(headers: IncomingHttpHeaders): Promise<Principal> {
    const authorization = headerValue(headers, 'authorization');
    const jwt = headerValue(headers, this.config.RAG_JWT_HEADER)?.replace(/^Bearer\s+/i, '').trim();
    if (!authorization) {
      if (await this.anonymousAllowed()) {
        if (jwt) throw new AppError('unauthorized', `a JWT in ${this.config.RAG_JWT_HEADER} needs an API key too (Authorization: Bearer <api key>)`);
        return { tenant: 'default', scopes: API_SCOPES, kind: 'anonymous', keyId: null };
      }
      throw new AppError('unauthorized', 'missing `Authorization: Bearer <api key>`');
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m) throw new AppError('unauthorized', 'the Authorization header must be `Bearer <api key>`');
    const key = await this.lookup(m[1]!);
    if (!key) throw new AppError('unauthorized', 'invalid API key');
    if (!jwt) return key;
    if (!this.jwt) throw new AppError('unauthorized', `a JWT was sent in ${this.config.RAG_JWT_HEADER} but none can be verified (set RAG_JWT_SECRET or RAG_JWT_JWKS_URL)`);
    const id = await this.jwt.verify(jwt);
    if (this.config.RAG_JWT_TENANT_CLAIM) {
      if (id.tenant === undefined) throw new AppError('unauthorized', `invalid JWT: claim "${this.config.RAG_JWT_TENANT_CLAIM}" is missing`);
      if (id.tenant !== key.tenant) throw new AppError('forbidden', "the JWT's tenant is not the API key's tenant");
    }
    // The forwarded user's identity replaces the key's own groups (the key belongs to the gateway, not the user).
    const principals = [...new Set([...(id.subject ? [userPrincipal(id.subject)] : []), ...id.groups.map(groupPrincipal)])];
    return { ...key, principals, ...(id.subject ? { subject: id.subject } : {}) };
  }

  private async lookup(token: string): Promise<Principal | null> {
    const digest = sha256(token);
    // Every configured key is compared (no early exit), each in constant time.
    let env: (typeof this.envKeys)[number] | undefined;
    for (const k of this.envKeys) if (timingSafeEqual(k.digest, digest) && !env) env = k;
    if (env) return { tenant: env.tenant, scopes: API_SCOPES, kind: 'env', keyId: env.id };
    // The store is indexed by digest: a lookup's timing can only reveal bits of a sha256 of a 256-bit secret.
    const r = await this.store.findByDigest(digest.toString('hex'));
    if (!r) return null;
    this.noteUse(r.id);
    return {
      tenant: r.tenant,
      scopes: r.scopes,
      kind: 'stored',
      keyId: r.id,
      ...(r.unrestricted ? {} : { principals: r.groups.map(groupPrincipal) }),
      ...(r.rate_limit ? { rateLimit: r.rate_limit } : {}),
    };
  }

  /** last_used_at, written at most once a minute per key. */
  private noteUse(id: string): void {
    const now = Date.now();
    if (now - (this.touched.get(id) ?? 0) < 60_000) return;
    this.touched.set(id, now);
    void this.store.touch(id, new Date(now).toISOString()).catch(() => undefined);
  }
}
