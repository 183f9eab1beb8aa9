import type { KeywordEngineClient } from './engine-client';
import type { IndexCreateBody, IndexNames } from './mapping';
import { parseReindexResponse } from './responses';

/**
 * Blue/green index management over two aliases:
 *
 *   `${prefix}-write` ─┐
 *                      ├─► `${prefix}-vN` (physical)
 *   `${prefix}-read`  ─┘
 *
 * {@link ensureAliasedIndex} creates `${prefix}-v1` with both aliases on first use (idempotent, safe when several
 * processes start at once) and repairs a missing write alias. {@link reindexAndSwapAliases} moves to `${prefix}-v(N+1)`:
 *
 *   1. create the new physical index with the current layout (new analysis / BM25 parameters / shard count);
 *   2. atomically point the write alias at it: from now on upserts land in the new index;
 *   3. server-side `_reindex` old → new with `op_type: create`, so chunks written since step 2 are never overwritten
 *      by their older copies;
 *   4. refresh, then atomically point the read alias at the new index (searches switch in one step);
 *   5. optionally delete the old index.
 *
 * Between steps 2 and 4 searches still read the old index, so chunks upserted in that window become searchable at
 * the swap; deletes are sent to both aliases (see the keyword index) and are therefore applied to both indexes, but a
 * delete that runs while `_reindex` is copying that very document can be undone by the copy. Run a reindex in a
 * quiet period (or replay deletes from the registry afterwards). `_reindex` copies the stored `_source`: it re-applies
 * mappings and similarity, not the client-side segmentation of `text_seg` — after a tokenizer change, re-ingest.
 */

export interface AliasTimeouts {
  /** Deadline of alias/index administration calls. */
  adminTimeoutMs: number;
  /** Deadline of the `_reindex` call (it waits for completion). */
  reindexTimeoutMs: number;
}

/** Makes sure the read and write aliases exist; returns the physical index they point to. */
export async function ensureAliasedIndex(client: KeywordEngineClient, names: IndexNames, body: IndexCreateBody, timeoutMs: number): Promise<string> {
  const readTargets = await client.getAliasTargets(names.readAlias, timeoutMs);
  if (readTargets.length > 1) throw new Error(`alias ${names.readAlias} points to several indexes (${readTargets.join(', ')}); expected one`);
  if (readTargets.length === 1) {
    const current = readTargets[0]!;
    const writeTargets = await client.getAliasTargets(names.writeAlias, timeoutMs);
    if (writeTargets.length === 0) {
      await client.updateAliases([{ add: { index: current, alias: names.writeAlias, is_write_index: true } }], timeoutMs);
    }
    return current;
  }
  const first = names.physical(1);
  const created = await client.createIndex(
    first,
    { ...body, aliases: { [names.readAlias]: {}, [names.writeAlias]: { is_write_index: true } } },
    timeoutMs,
  );
  if (created === 'exists') {
    // Another process created it (or a previous start failed half-way): make sure both aliases are there.
    const [r, w] = await Promise.all([client.getAliasTargets(names.readAlias, timeoutMs), client.getAliasTargets(names.writeAlias, timeoutMs)]);
    const actions = [];
    if (r.length === 0) actions.push({ add: { index: first, alias: names.readAlias } });
    if (w.length === 0) actions.push({ add: { index: first, alias: names.writeAlias, is_write_index: true } });
    if (actions.length > 0) await client.updateAliases(actions, timeoutMs);
  }
  return first;
}

export interface ReindexOptions {
  /** Delete the old physical index after the swap (default false: keep it for a rollback). */
  deleteOld?: boolean;
  /** Version of the new physical index (default: current + 1). */
  targetVersion?: number;
}

export interface ReindexSummary {
  from: string;
  to: string;
  /** Documents copied by `_reindex` (not counting chunks written to the new index meanwhile). */
  copied: number;
  /** Documents skipped because the new index already had a newer copy. */
  skipped: number;
  deletedOld: boolean;
}

export async function reindexAndSwapAliases(
  client: KeywordEngineClient,
  names: IndexNames,
  body: IndexCreateBody,
  timeouts: AliasTimeouts,
  opts: ReindexOptions = {},
): Promise<ReindexSummary> {
  const { adminTimeoutMs } = timeouts;
  const readTargets = await client.getAliasTargets(names.readAlias, adminTimeoutMs);
  if (readTargets.length !== 1) throw new Error(`alias ${names.readAlias} must point to exactly one index to reindex (found ${readTargets.length})`);
  const from = readTargets[0]!;
  const currentVersion = names.versionOf(from) ?? 1;
  const targetVersion = opts.targetVersion ?? currentVersion + 1;
  const to = names.physical(targetVersion);
  if (to === from) throw new Error(`reindex target ${to} is the current index`);

  if ((await client.createIndex(to, body, adminTimeoutMs)) === 'exists') {
    throw new Error(`reindex target ${to} already exists (a previous reindex did not finish?); delete it or pass targetVersion`);
  }
  const writeTargets = await client.getAliasTargets(names.writeAlias, adminTimeoutMs);
  await client.updateAliases(
    [...writeTargets.map((index) => ({ remove: { index, alias: names.writeAlias } })), { add: { index: to, alias: names.writeAlias, is_write_index: true } }],
    adminTimeoutMs,
  );
  const result = parseReindexResponse(await client.reindex(from, to, timeouts.reindexTimeoutMs));
  await client.refresh(to, adminTimeoutMs);
  await client.updateAliases([{ remove: { index: from, alias: names.readAlias } }, { add: { index: to, alias: names.readAlias } }], adminTimeoutMs);
  let deletedOld = false;
  if (opts.deleteOld) {
    await client.deleteIndex(from, adminTimeoutMs);
    deletedOld = true;
  }
  return { from, to, copied: result.created + result.updated, skipped: result.versionConflicts, deletedOld };
}
