import { timingSafeEqual, createHash } from 'node:crypto';
import type { Request } from 'express';
import type { SearchScope } from '@rag/contracts';
import { AppError } from '@rag/platform';

export interface Principal {
  tenant: string;
  /** undefined = unrestricted inside the tenant. */
  groups?: string[];
}

const sha = (s: string) => createHash('sha256').update(s).digest();

/**
 * API keys from RAG_API_KEYS: comma-separated `key` or `key=tenant`. Keys are compared as sha256 digests in
 * constant time. With no keys configured (only allowed on loopback) every caller is the anonymous tenant `default`.
 */
export class ApiKeyAuth {
  private readonly keys: { digest: Buffer; tenant: string }[];

  constructor(spec: string | undefined) {
    this.keys = (spec ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map((entry) => {
        const [key, tenant] = entry.split('=');
        return { digest: sha(key!), tenant: tenant?.trim() || 'default' };
      });
  }

  get enabled(): boolean {
    return this.keys.length > 0;
  }

  authenticate(req: Request): Principal {
    if (!this.enabled) return { tenant: 'default' };
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header);
    if (!m) throw new AppError('unauthorized', 'missing `Authorization: Bearer <api key>`');
    const digest = sha(m[1]!.trim());
    const hit = this.keys.find((k) => timingSafeEqual(k.digest, digest));
    if (!hit) throw new AppError('unauthorized', 'invalid API key');
    return { tenant: hit.tenant };
  }
}

export const scopeOf = (p: Principal): SearchScope => ({ tenant: p.tenant, ...(p.groups ? { principals: p.groups } : {}) });
