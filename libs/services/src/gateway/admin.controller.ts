import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { z } from 'zod';
import { ApiKeyCreateSchema, type ApiKeyView } from '@rag/contracts';
import { AppError, invalidRequest } from '@rag/platform';
import { API_KEY_STORE, type ApiKeyRecord, type ApiKeyStore } from '@rag/ports';
import { issueApiKey } from './auth';
import { principalOf, RequireScope } from './auth.guard';

const ListQuerySchema = z.object({ include_revoked: z.enum(['true', 'false']).optional() }).strict();

export const apiKeyView = (r: ApiKeyRecord): ApiKeyView => ({
  id: r.id,
  name: r.name,
  tenant: r.tenant,
  scopes: r.scopes,
  groups: r.groups,
  unrestricted: r.unrestricted,
  rate_limit: r.rate_limit,
  created_at: r.created_at,
  last_used_at: r.last_used_at,
  revoked_at: r.revoked_at,
});

const invalid = (issues: z.core.$ZodIssue[]): AppError => invalidRequest(issues);

/** API keys of the caller's tenant (admin scope). The secret is in the create answer only; the store keeps its digest. */
@Controller('v1/admin')
@RequireScope('admin')
export class AdminController {
  constructor(@Inject(API_KEY_STORE) private readonly store: ApiKeyStore) {}

  @Post('api-keys')
  @HttpCode(201)
  async create(@Req() req: Request, @Body() body: unknown) {
    const who = principalOf(req);
    const parsed = ApiKeyCreateSchema.safeParse(body ?? {});
    if (!parsed.success) throw invalid(parsed.error.issues);
    const tenant = parsed.data.tenant ?? who.tenant;
    if (tenant !== who.tenant) throw new AppError('forbidden', 'an admin key manages the keys of its own tenant only (use `rag keys create --tenant` for another)');
    const { record, key } = await issueApiKey(this.store, { ...parsed.data, tenant });
    return { ...apiKeyView(record), key };
  }

  @Get('api-keys')
  async list(@Req() req: Request, @Query() query: unknown) {
    const q = ListQuerySchema.safeParse(query);
    if (!q.success) throw invalid(q.error.issues);
    const keys = await this.store.list({ tenant: principalOf(req).tenant, includeRevoked: q.data.include_revoked === 'true' });
    return { api_keys: keys.map(apiKeyView) };
  }

  @Delete('api-keys/:id')
  @HttpCode(200)
  async revoke(@Req() req: Request, @Param('id') id: string) {
    const r = await this.store.revoke(id, principalOf(req).tenant);
    if (!r) throw new AppError('not_found', `API key ${id} not found`);
    return apiKeyView(r);
  }
}
