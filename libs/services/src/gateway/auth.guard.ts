import { Inject, Injectable, SetMetadata, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import type { ApiScope } from '@rag/contracts';
import { AppError } from '@rag/platform';
import type { Authenticator, Principal } from './auth';
import { AUTH, RATE_LIMITER } from './gateway.tokens';
import type { RateLimiter } from '@rag/ports';

const PUBLIC = 'rag:public';
const SCOPES = 'rag:scopes';

/**
 * Marks a controller or handler as reachable without an API key (health, metrics, the playground page, and the
 * source webhooks under /v1/webhooks/*, which verify their own signatures).
 */
export const Public = () => SetMetadata(PUBLIC, true);

/** The scope(s) a route needs; any one of them suffices. A non-public route that declares none needs `admin`. */
export const RequireScope = (...scopes: ApiScope[]) => SetMetadata(SCOPES, scopes);

type WithPrincipal = Request & { principal?: Principal };

/** The principal the guard attached to the request. */
export function principalOf(req: Request): Principal {
  const p = (req as WithPrincipal).principal;
  if (!p) throw new AppError('internal', 'no principal on the request: the route is public but reads the caller');
  return p;
}

/**
 * The gateway's global guard (APP_GUARD): authenticates every HTTP request that is not {@link Public}, applies the
 * key's rate limit (429 + `Retry-After`), then checks the route's scope (403). Non-HTTP contexts (gRPC handlers in
 * the same process) are not the gateway's API and pass through.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(AUTH) private readonly auth: Authenticator,
    @Inject(RATE_LIMITER) private readonly limiter: RateLimiter,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (ctx.getType() !== 'http') return true;
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC, targets)) return true;
    const req = ctx.switchToHttp().getRequest<WithPrincipal>();
    const res = ctx.switchToHttp().getResponse<Response>();
    let principal: Principal;
    try {
      // The local port of the connection: the anonymous local mode checks that Host names it (DNS rebinding).
      principal = await this.auth.authenticate(req.headers, { method: req.method, ...(req.socket?.localPort !== undefined ? { localPort: req.socket.localPort } : {}) });
    } catch (e) {
      if (e instanceof AppError && e.code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Bearer realm="rag"');
      throw e;
    }
    if (principal.keyId !== null) {
      const d = await this.limiter.take(principal.keyId, principal.rateLimit);
      if (d) {
        res.setHeader('RateLimit-Limit', String(d.limit.burst));
        res.setHeader('RateLimit-Remaining', String(d.remaining));
        if (!d.allowed) {
          res.setHeader('Retry-After', String(d.retryAfterS));
          throw new AppError('rate_limited', `rate limit of ${d.limit.rps} requests/s (burst ${d.limit.burst}) exceeded for this API key; retry in ${d.retryAfterS} s`, {
            retry_after_s: d.retryAfterS,
          });
        }
      }
    }
    const needed = this.reflector.getAllAndOverride<ApiScope[] | undefined>(SCOPES, targets) ?? ['admin'];
    if (!needed.some((s) => principal.scopes.includes(s))) {
      throw new AppError('forbidden', `this API key lacks the scope ${needed.map((s) => `"${s}"`).join(' or ')}`);
    }
    req.principal = principal;
    return true;
  }
}
