import { Command } from 'commander';
import { API_SCOPES, ApiKeyCreateSchema } from '@rag/contracts';
import { createApiKeyStore } from '@rag/adapters';
import type { AppConfig } from '@rag/platform';
import type { ApiKeyStore } from '@rag/ports';
import { apiKeyView, issueApiKey } from '@rag/services';

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * `rag keys create|list|revoke`: manages the API key store (RAG_DATA_DIR/api-keys.db) directly, for any tenant —
 * how the first admin key of a tenant is made. A running gateway sees a change on its next request.
 */
export function keysCommand(config: () => AppConfig): Command {
  const keys = new Command('keys').description('manage API keys in RAG_DATA_DIR (the first admin key of a tenant, rotation, revocation)');
  // The store of the configuration: RAG_DATA_DIR/api-keys.db, or PostgreSQL when RAG_DATABASE_URL is set.
  const withStore = async <T>(fn: (s: ApiKeyStore) => Promise<T>): Promise<T> => {
    const store = await createApiKeyStore(config());
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  };

  keys
    .command('create')
    .description('create a key and print it once (JSON); only its sha256 digest is stored')
    .requiredOption('--tenant <tenant>', 'tenant the key is bound to')
    .requiredOption('--scopes <list>', `comma-separated: ${API_SCOPES.join(', ')}`, list)
    .option('--groups <list>', 'comma-separated ACL groups (documents with `group:<name>` in their ACL)', list)
    .option('--unrestricted', 'read every document of the tenant regardless of ACL (unless a JWT is forwarded)')
    .option('--name <name>', 'a label')
    .option('--rps <n>', 'own rate limit: requests per second', Number)
    .option('--burst <n>', 'own rate limit: burst size', Number)
    .action(async (o: { tenant: string; scopes: string[]; groups?: string[]; unrestricted?: boolean; name?: string; rps?: number; burst?: number }) => {
      const parsed = ApiKeyCreateSchema.safeParse({
        tenant: o.tenant,
        scopes: o.scopes,
        ...(o.groups ? { groups: o.groups } : {}),
        ...(o.unrestricted ? { unrestricted: true } : {}),
        ...(o.name ? { name: o.name } : {}),
        ...(o.rps !== undefined || o.burst !== undefined ? { rate_limit: { rps: o.rps, burst: o.burst ?? Math.max(1, Math.ceil((o.rps ?? 1) * 2)) } } : {}),
      });
      if (!parsed.success) {
        process.stderr.write(`rag keys create: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'options'}: ${i.message}`).join('; ')}\n`);
        process.exit(2);
      }
      const { record, key } = await withStore((s) => issueApiKey(s, { ...parsed.data, tenant: o.tenant }));
      process.stdout.write(JSON.stringify({ ...apiKeyView(record), key }) + '\n');
      process.stderr.write('rag keys: the key is shown only this once; send it as `Authorization: Bearer <key>`\n');
    });

  keys
    .command('list')
    .description('list keys (never the secrets)')
    .option('--tenant <tenant>', 'only this tenant')
    .option('--all', 'include revoked keys')
    .action(async (o: { tenant?: string; all?: boolean }) => {
      const rows = await withStore((s) => s.list({ ...(o.tenant ? { tenant: o.tenant } : {}), includeRevoked: !!o.all }));
      for (const r of rows) process.stdout.write(JSON.stringify(apiKeyView(r)) + '\n');
    });

  keys
    .command('revoke')
    .description('revoke a key by id; it stops working on the next request')
    .argument('<id>')
    .action(async (id: string) => {
      const r = await withStore((s) => s.revoke(id));
      if (!r) {
        process.stderr.write(`rag keys revoke: no key ${id}\n`);
        process.exit(1);
      }
      process.stdout.write(JSON.stringify(apiKeyView(r)) + '\n');
    });
  return keys;
}
