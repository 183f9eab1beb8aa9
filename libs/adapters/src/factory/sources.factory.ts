import { readFileSync } from 'node:fs';
import type { AppConfig } from '@rag/platform';
import type { SourceConnector, SourceStateStore } from '@rag/ports';
import { ConfluenceConnector } from '../confluence';
import { NotionConnector } from '../notion';
import { SqliteSourceStateStore } from '../sqlite-registry';
import { databaseUrl } from './shared-state.factory';

/** A secret from its variable or from the file named by `<NAME>_FILE` (Kubernetes secrets mounted as files). */
export function secretFrom(value: string | undefined, file: string | undefined): string | undefined {
  if (value) return value;
  if (!file) return undefined;
  const s = readFileSync(file, 'utf8').trim();
  return s || undefined;
}

export const sourcesDefaultAcl = (config: AppConfig): string[] =>
  config.RAG_SOURCES_DEFAULT_ACL.split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export const confluenceSpaces = (config: AppConfig): string[] =>
  config.RAG_CONFLUENCE_SPACES.split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** The connectors configured: Confluence when RAG_CONFLUENCE_BASE_URL is set, Notion when a Notion token is. */
export function createSourceConnectors(config: AppConfig): SourceConnector[] {
  const out: SourceConnector[] = [];
  const acl = sourcesDefaultAcl(config);
  if (config.RAG_CONFLUENCE_BASE_URL) {
    const token = secretFrom(config.RAG_CONFLUENCE_API_TOKEN, config.RAG_CONFLUENCE_API_TOKEN_FILE);
    if (!token) throw new Error('RAG_CONFLUENCE_BASE_URL is set but no Confluence API token is configured');
    out.push(
      new ConfluenceConnector({
        baseUrl: config.RAG_CONFLUENCE_BASE_URL,
        apiToken: token,
        spaces: confluenceSpaces(config),
        defaultAcl: acl,
        ...(config.RAG_CONFLUENCE_EMAIL ? { email: config.RAG_CONFLUENCE_EMAIL } : {}),
        ...(config.RAG_CONFLUENCE_SITE ? { site: config.RAG_CONFLUENCE_SITE } : {}),
      }),
    );
  }
  const notionToken = secretFrom(config.RAG_NOTION_TOKEN, config.RAG_NOTION_TOKEN_FILE);
  if (notionToken) out.push(new NotionConnector({ baseUrl: config.RAG_NOTION_BASE_URL, token: notionToken, defaultAcl: acl }));
  return out;
}

/** The `<site>` of Confluence document ids (RAG_CONFLUENCE_SITE, else the base URL's host name). */
export function confluenceSite(config: AppConfig): string | undefined {
  if (config.RAG_CONFLUENCE_SITE) return config.RAG_CONFLUENCE_SITE;
  return config.RAG_CONFLUENCE_BASE_URL ? new URL(config.RAG_CONFLUENCE_BASE_URL).hostname : undefined;
}

export async function createSourceState(config: AppConfig): Promise<SourceStateStore> {
  // RAG_DATABASE_URL: PostgreSQL (webhook de-duplication and source order shared by every gateway replica).
  const url = databaseUrl(config);
  if (url) {
    const { PgSourceStateStore } = await import('../postgres');
    return PgSourceStateStore.open({ url, poolMax: config.RAG_DATABASE_POOL_MAX });
  }
  return new SqliteSourceStateStore({ dir: config.dataDir, synchronous: config.RAG_SQLITE_SYNCHRONOUS });
}
