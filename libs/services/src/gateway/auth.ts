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
 * with keys from RAG_JWT_JWKS_URL (cached and refreshed by jose on an unknown `kid`); `exp` is required (a token
 * without one would be valid forever) and its lifetime (`exp` - `iat`, or `exp` - now without `iat`) may not exceed
 * RAG_JWT_MAX_LIFETIME_S; `exp`/`nbf` with the configured clock tolerance, and `iss`/`aud` when configured. Symmetric and asymmetric algorithms are never mixed, so a token
 * signed with a public key used as an HMAC secret is refused.
 */
export class JwtVerifier {
  private readonly key: Uint8Array | JWTVerifyGetKey;
  private readonly algorithms: string[];

  constructor(
    private readonly config: Pick<
      AppConfig,
      | 'RAG_JWT_SECRET'
      | 'RAG_JWT_JWKS_URL'
      | 'RAG_JWT_ISSUER'
      | 'RAG_JWT_AUDIENCE'
      | 'RAG_JWT_GROUPS_CLAIM'
      | 'RAG_JWT_TENANT_CLAIM'
      | 'RAG_JWT_CLOCK_TOLERANCE_S'
      | 'RAG_JWT_MAX_LIFETIME_S'
    >,
  ) {
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
        requiredClaims: ['exp'],
        ...(this.config.RAG_JWT_ISSUER ? { issuer: this.config.RAG_JWT_ISSUER } : {}),
        ...(this.config.RAG_JWT_AUDIENCE ? { audience: this.config.RAG_JWT_AUDIENCE } : {}),
      };
      payload =
        this.key instanceof Uint8Array ? (await jwtVerify(token, this.key, opts)).payload : (await jwtVerify(token, this.key, opts)).payload;
    } catch (e) {
      throw new AppError('unauthorized', `invalid JWT: ${jwtProblem(e)}`);
    }
    // jose has checked that exp (required) and iat (when present) are numbers. An iat in the future does not extend
    // the allowance: the lifetime is counted from now then.
    const now = Math.floor(Date.now() / 1000);
    const from = typeof payload.iat === 'number' ? Math.min(payload.iat, now) : now;
    const lifetime = payload.exp! - from;
    if (lifetime > this.config.RAG_JWT_MAX_LIFETIME_S) {
      throw new AppError(
        'unauthorized',
        `invalid JWT: its lifetime (exp - ${typeof payload.iat === 'number' ? 'iat' : 'now'} = ${lifetime} s) is longer than RAG_JWT_MAX_LIFETIME_S (${this.config.RAG_JWT_MAX_LIFETIME_S} s)`,
      );
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

/** What the transport knows about a request besides its headers. */
export interface RequestFacts {
  method?: string;
  /** The local port the connection arrived on (the bound port; with RAG_PORT=0 the ephemeral one). */
  localPort?: number;
}

/**
 * `host[:port]` of a Host header when it names this loopback server: `localhost`, an IPv4 literal in 127.0.0.0/8 or
 * `[::1]`, with the bound port (no port = 80). A DNS-rebinding page reaches 127.0.0.1 under its own domain name, so
 * its requests carry that name in Host and are refused here. Returns the normalized authority, or null.
 */
export function loopbackAuthority(host: string | undefined, port: number): string | null {
  if (!host || host.length > 300) return null;
  let u: URL;
  try {
    u = new URL(`http://${host}`);
  } catch {
    return null;
  }
  if (u.username || u.password || u.pathname !== '/' || u.search || u.hash) return null;
  const name = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  if (!isLoopback(name)) return null;
  return (u.port === '' ? 80 : Number(u.port)) === port ? u.host : null;
}

/** The serialized origin of an Origin header (`null` and anything unparsable: null). */
function originOf(origin: string): string | null {
  try {
    return new URL(origin).origin;
  } catch {
    return null;
  }
}

/** Content types a browser sends cross-site without a CORS preflight (Fetch standard), and no content type at all. */
const SIMPLE_CONTENT_TYPES = new Set(['', 'application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

/** How an operator gets a key without the API (the anonymous mode is closed for good once a key has existed). */
const RECOVER_KEY =
  'create one without the API: `npm run rag -- keys create --tenant default --scopes admin,ingest,query --unrestricted` (writes RAG_DATA_DIR/api-keys.db directly, even while the gateway runs), or set RAG_API_KEYS';

/**
 * Establishes the {@link Principal} of a request from `Authorization: Bearer <api key>` (RAG_API_KEYS entries,
 * compared as sha256 digests in constant time, or the key store, looked up by digest) and, optionally, a JWT in
 * RAG_JWT_HEADER. Without any key configured, on loopback and with RAG_AUTH=auto, callers are the anonymous tenant
 * `default` with every scope (the local, single-user mode) — but only callers that cannot be a web page abusing the
 * user's browser: the Host must be this loopback server (DNS rebinding), an Origin must be this server's own
 * (cross-site requests), and a POST must not have a content type a page can send cross-site without a preflight
 * (form and text bodies: CSRF). Once any key has existed in the store, anonymous access never comes back, even
 * when every key is revoked (RAG_AUTH=auto is not a fallback; an operator gets a new key from the CLI).
 */
export class Authenticator {
  private readonly envKeys: ReturnType<typeof parseEnvKeys>;
  private readonly touched = new Map<string, number>();
  /** Set once the store says a key has existed; that never becomes false again, so it is not asked again. */
  private closed = false;

  constructor(
    private readonly config: AppConfig,
    private readonly store: ApiKeyStore,
    private readonly jwt: JwtVerifier | null = JwtVerifier.fromConfig(config),
  ) {
    this.envKeys = parseEnvKeys(config.RAG_API_KEYS);
  }

  /**
   * Anonymous access: RAG_AUTH=auto, loopback, no key in RAG_API_KEYS, and no key ever stored (checked per request, so
   * creating the first key closes it; revoking the last one does not re-open it).
   */
  async anonymousAllowed(): Promise<boolean> {
    if (this.closed || this.config.RAG_AUTH !== 'auto' || !isLoopback(this.config.RAG_HOST) || this.envKeys.length > 0) return false;
    if (await this.store.keysEverIssued()) this.closed = true;
    return !this.closed;
  }

  async authenticate(headers: IncomingHttpHeaders, request: RequestFacts = {}): Promise<Principal> {
    const authorization = headerValue(headers, 'authorization');
    const jwt = headerValue(headers, this.config.RAG_JWT_HEADER)?.replace(/^Bearer\s+/i, '').trim();
    if (!authorization) {
      if (await this.anonymousAllowed()) {
        this.checkLocalCaller(headers, request);
        if (jwt) throw new AppError('unauthorized', `a JWT in ${this.config.RAG_JWT_HEADER} needs an API key too (Authorization: Bearer <api key>)`);
        return { tenant: 'default', scopes: API_SCOPES, kind: 'anonymous', keyId: null };
      }
      throw new AppError('unauthorized', `missing \`Authorization: Bearer <api key>\`${await this.allRevokedHint()}`);
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m) throw new AppError('unauthorized', 'the Authorization header must be `Bearer <api key>`');
    const key = await this.lookup(m[1]!);
    if (!key) throw new AppError('unauthorized', `invalid API key${await this.allRevokedHint()}`);
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

  /**
   * The anonymous local mode serves only requests that cannot come from a web page driving the user's browser: Host
   * must name this loopback server with its port (DNS rebinding), an Origin (browsers send one on cross-origin
   * requests and on every POST) must be this server's own, e.g. the playground at `/`, and a POST must carry a
   * content type that needs a CORS preflight (JSON) — a form, multipart or text/plain body is what any page can
   * submit cross-site, so without a key it is refused even without an Origin (older browsers omit it).
   */
  private checkLocalCaller(headers: IncomingHttpHeaders, request: RequestFacts): void {
    const port = request.localPort ?? this.config.RAG_PORT;
    const host = headerValue(headers, 'host');
    const authority = loopbackAuthority(host, port);
    const how = `use an API key (Authorization: Bearer <key>), or call http://127.0.0.1:${port} (or localhost, [::1]) directly`;
    if (authority === null) {
      throw new AppError('forbidden', `the anonymous local mode answers only requests to this loopback server (Host 127.0.0.1:${port}, localhost:${port} or [::1]:${port}), not Host ${JSON.stringify(host ?? '')} (DNS rebinding protection); ${how}`);
    }
    const origin = headerValue(headers, 'origin');
    if (origin !== undefined && originOf(origin) !== `http://${authority}`) {
      throw new AppError('forbidden', `the anonymous local mode refuses cross-origin requests (Origin ${JSON.stringify(origin)} is not http://${authority}); ${how}`);
    }
    const method = (request.method ?? 'GET').toUpperCase();
    const type = (headerValue(headers, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (method === 'POST' && SIMPLE_CONTENT_TYPES.has(type)) {
      throw new AppError(
        'forbidden',
        `the anonymous local mode refuses a POST ${type ? `with content type ${type}` : 'without a content type'} (any web page can send one cross-site: CSRF); send JSON (content-type: application/json; files as content_base64), or use an API key`,
      );
    }
  }

  /** The recovery hint when keys are required because every stored key was revoked. */
  private async allRevokedHint(): Promise<string> {
    if (this.envKeys.length > 0 || !(await this.store.keysEverIssued()) || (await this.store.countActive()) > 0) return '';
    return `; every API key of this gateway has been revoked, and the anonymous local mode does not come back once a key has existed — ${RECOVER_KEY}`;
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
