/** What parent expansion needs from a child hit. */
export interface ParentExpansionHit {
  chunk_id: string;
  text: string;
  score: number;
  parent_id?: string | null;
}

/**
 * Parent-child retrieval: small child chunks are searched, their larger parent chunk is what the
 * generator reads.
 *
 * Behaviour:
 * - Each hit gets `parent_text`: the text of its parent from `parentTexts` (keyed by parent chunk id).
 * - Several children of the same parent collapse into one result: the best-scoring child is kept (its
 *   chunk_id, text, score and every other field), the others are dropped, since they would hand the
 *   generator the same parent text twice. Ties keep the earlier hit.
 * - A hit without `parent_id`, or whose parent is not in `parentTexts` (parent-child chunking off, or
 *   the parent was not found), is kept as is with `parent_text` = its own text and is never collapsed
 *   (distinct children with unknown parents carry distinct texts).
 * - The result is ordered by score, best first; equal scores keep the input order.
 */
export function expandToParents<T extends ParentExpansionHit>(
  hits: readonly T[],
  parentTexts: ReadonlyMap<string, string>,
): Array<T & { parent_text: string }> {
  const byParent = new Map<string, number>();
  const out: Array<{ hit: T & { parent_text: string }; order: number }> = [];
  hits.forEach((hit, order) => {
    const parentId = hit.parent_id ?? undefined;
    const parentText = parentId !== undefined ? parentTexts.get(parentId) : undefined;
    if (parentId === undefined || parentText === undefined) {
      out.push({ hit: { ...hit, parent_text: hit.text }, order });
      return;
    }
    const at = byParent.get(parentId);
    if (at === undefined) {
      byParent.set(parentId, out.length);
      out.push({ hit: { ...hit, parent_text: parentText }, order });
      return;
    }
    const kept = out[at];
    if (kept !== undefined && hit.score > kept.hit.score) kept.hit = { ...hit, parent_text: parentText };
  });
  return out.sort((a, b) => b.hit.score - a.hit.score || a.order - b.order).map((e) => e.hit);
}
