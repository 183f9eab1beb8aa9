/** `confluence:<site>:<pageId>` (site = the Confluence host, e.g. `acme.atlassian.net`). */
export function confluenceDocumentId(site: string, pageId: string): string {
  return `confluence:${site}:${pageId}`;
}

/** Notion ids arrive with or without dashes; documents use the dashed lowercase form: `notion:<uuid>`. */
export function normalizeNotionId(id: string): string {
  const hex = id.replace(/-/g, '').toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) return id.toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function notionDocumentId(pageId: string): string {
  return `notion:${normalizeNotionId(pageId)}`;
}

/** The source's own page id from a document id of that kind; null when the id is of another kind/site. */
export function sourcePageId(documentId: string, kind: 'confluence' | 'notion', site?: string): string | null {
  const prefix = kind === 'confluence' ? `confluence:${site ?? ''}:` : 'notion:';
  return documentId.startsWith(prefix) ? documentId.slice(prefix.length) : null;
}
