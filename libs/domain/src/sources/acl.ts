import type { ConfluenceReadRestriction } from '@rag/contracts';

/**
 * Confluence read restrictions → the document `acl`: `group:<name>` for each group and `user:<accountId>` for each
 * user allowed to read (the principal forms the gateway matches ACLs against), or `['*']`
 * (everyone in the tenant) when the page has no read restriction. Inherited (ancestor) restrictions are not
 * returned by this endpoint; pages under a restricted parent should carry their own restriction to be fenced.
 */
export function confluenceAcl(r: ConfluenceReadRestriction | null, fallback: string[] = ['*']): string[] {
  if (!r) return fallback;
  const groups = r.restrictions.group?.results.map((g) => `group:${g.name}`) ?? [];
  const users = r.restrictions.user?.results.map((u) => `user:${u.accountId}`) ?? [];
  const acl = [...new Set([...groups, ...users])].filter((s) => s.length > 0 && s.length <= 256);
  return acl.length ? acl : fallback;
}
