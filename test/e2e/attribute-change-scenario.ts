/**
 * Issue 11, item 1: a document re-sent with the same body but another ACL, title or metadata must reach every store
 * (dense and keyword) and the answer path, in both modes (embedded: test/e2e/acl-change.e2e.spec.ts; distributed:
 * the last case of test/infra/access.infra.spec.ts). Every check runs in every search mode, so a store that kept the
 * old attributes fails it.
 */
import { expect } from 'vitest';
import type { Call } from './access-scenario';

export const DOC_ID = 'acme-stipend';
/** Words no other scenario document has, so keyword search finds only this document. */
export const QUESTION = 'quillwort stipend ledger annual bonus';
export const TEXT =
  'Quillwort stipend ledger.\n\nThe quillwort stipend ledger lists the annual bonus of every employee and is reconciled each quarter by payroll.';
export const MODES = ['hybrid', 'dense', 'keyword'] as const;

export interface Principals {
  /** May ingest into the tenant. */
  writer: Record<string, string>;
  /** A principal of the tenant without groups. */
  everyone: Record<string, string>;
  /** A principal in group hr. */
  hr: Record<string, string>;
}

export interface Version {
  title: string;
  acl: string[];
  metadata: Record<string, string | number | boolean | string[]>;
  text?: string;
}

interface Hit {
  document_id: string;
  chunk_id: string;
  title: string;
}

/** Submits a version with every attribute given, checks it was queued (not taken for a duplicate), waits until it is done. */
export async function submit(call: Call, p: Principals, v: Version, timeoutMs = 120_000): Promise<number> {
  const r = await call('POST', '/v1/documents', { id: DOC_ID, text: v.text ?? TEXT, title: v.title, acl: v.acl, metadata: v.metadata }, p.writer);
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  const accepted = r.body as { version: number; status: string; unchanged?: boolean };
  expect(accepted.status).toBe('queued');
  expect(accepted.unchanged).toBeUndefined();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await call('GET', `/v1/documents/${DOC_ID}`, undefined, p.writer);
    const body = s.body as { version?: number; status?: string };
    if (body.version === accepted.version && (body.status === 'indexed' || body.status === 'failed')) {
      expect(body.status, JSON.stringify(body)).toBe('indexed');
      return accepted.version;
    }
    if (Date.now() > deadline) throw new Error(`${DOC_ID} v${accepted.version} stuck: ${JSON.stringify(body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** This document's hits in /v1/retrieve (top 20). */
export async function hits(call: Call, who: Record<string, string>, mode: (typeof MODES)[number], filters?: Record<string, unknown>): Promise<Hit[]> {
  const r = await call('POST', '/v1/retrieve', { query: QUESTION, top_k: 20, mode, ...(filters ? { filters } : {}) }, who);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body as { results: Hit[] }).results.filter((h) => h.document_id === DOC_ID);
}

/**
 * Polls `get` until `ok` holds (at most `timeoutMs`), then returns the last value. Used only for "the new version is
 * visible" checks: Milvus searches at Bounded consistency, so a vector indexed a moment ago may take a few seconds to
 * be searchable (the embedded stores see it at once). "Nobody else sees it" checks never poll: the query-time version
 * fence and the ACL filter must hold from the first request.
 */
export async function eventually<T>(get: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((res) => setTimeout(res, 250));
  }
}

/** This document's citations in /v1/query. */
export async function cited(call: Call, who: Record<string, string>): Promise<Hit[]> {
  const r = await call('POST', '/v1/query', { question: QUESTION, top_k: 20 }, who);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body as { citations: Hit[] }).citations.filter((c) => c.document_id === DOC_ID);
}

export const V1: Version = { title: 'Stipend ledger', acl: ['*'], metadata: { dept: 'finance', level: 1 } };
export const NARROWED: Version = { ...V1, acl: ['group:hr'] };
export const RETITLED: Version = { ...NARROWED, title: 'Stipend ledger FY25' };
export const RETAGGED: Version = { ...RETITLED, metadata: { dept: 'people', level: 1 } };

/** Everyone sees the first version, in every mode and in answers. */
export async function indexFirstVersion(call: Call, p: Principals): Promise<void> {
  const v = await submit(call, p, V1);
  for (const mode of MODES) {
    const h = await eventually(() => hits(call, p.everyone, mode), (x) => x.length > 0 && x.every((y) => y.chunk_id.startsWith(`${DOC_ID}#v${v}#`)));
    expect(h.length, mode).toBeGreaterThan(0);
    expect(h.every((x) => x.chunk_id.startsWith(`${DOC_ID}#v${v}#`)), mode).toBe(true);
  }
  expect((await eventually(() => cited(call, p.everyone), (x) => x.length > 0)).length).toBeGreaterThan(0);
}

/** acl ["*"] → ["group:hr"] with the same text: a principal without groups loses it everywhere, hr keeps it. */
export async function narrowAcl(call: Call, p: Principals): Promise<void> {
  const v = await submit(call, p, NARROWED);
  for (const mode of MODES) {
    expect(await hits(call, p.everyone, mode), `everyone ${mode}`).toEqual([]);
    const h = await eventually(() => hits(call, p.hr, mode), (x) => x.length > 0 && x.every((y) => y.chunk_id.startsWith(`${DOC_ID}#v${v}#`)));
    expect(h.length, `hr ${mode}`).toBeGreaterThan(0);
    expect(h.every((x) => x.chunk_id.startsWith(`${DOC_ID}#v${v}#`)), `hr ${mode}`).toBe(true);
  }
  expect(await cited(call, p.everyone)).toEqual([]);
  expect((await eventually(() => cited(call, p.hr), (x) => x.length > 0)).length).toBeGreaterThan(0);
}

/** A new title with the same text: results and citations carry it; the ACL stays narrowed. */
export async function changeTitle(call: Call, p: Principals): Promise<void> {
  await submit(call, p, RETITLED);
  for (const mode of MODES) {
    const h = await eventually(() => hits(call, p.hr, mode), (x) => x.length > 0 && x.every((y) => y.title === RETITLED.title));
    expect(h.length, mode).toBeGreaterThan(0);
    expect(new Set(h.map((x) => x.title)), mode).toEqual(new Set([RETITLED.title]));
    expect(await hits(call, p.everyone, mode), `everyone ${mode}`).toEqual([]);
  }
  const c = await eventually(() => cited(call, p.hr), (x) => x.length > 0 && x.every((y) => y.title === RETITLED.title));
  expect(c.length).toBeGreaterThan(0);
  expect(new Set(c.map((x) => x.title))).toEqual(new Set([RETITLED.title]));
}

/** New metadata with the same text: a filter on the new value finds it, one on the old value does not. */
export async function changeMetadata(call: Call, p: Principals): Promise<void> {
  await submit(call, p, RETAGGED);
  for (const mode of MODES) {
    expect((await eventually(() => hits(call, p.hr, mode, { dept: 'people' }), (x) => x.length > 0)).length, mode).toBeGreaterThan(0);
    expect(await hits(call, p.hr, mode, { dept: 'finance' }), mode).toEqual([]);
  }
}

/**
 * The same body and attributes in other bytes (extra blank lines, ACL repeated): queued, then found unchanged, so the
 * active version stays (nothing is rewritten).
 */
export async function resendUnchanged(call: Call, p: Principals): Promise<void> {
  const before = await hits(call, p.hr, 'keyword');
  expect(before.length).toBeGreaterThan(0);
  const active = before[0]!.chunk_id.split('#')[1];
  await submit(call, p, { ...RETAGGED, acl: ['group:hr', 'group:hr'], text: TEXT.replace('\n\n', '\n\n\n\n') });
  for (const mode of MODES) {
    const h = await hits(call, p.hr, mode);
    expect(h.length, mode).toBeGreaterThan(0);
    expect(h.every((x) => x.chunk_id.split('#')[1] === active), mode).toBe(true);
  }
}
