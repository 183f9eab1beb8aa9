'use strict';
// Chunks of an existing keyword.db written again as new documents: what bench keyword-writes and keyword-churn commit.

/**
 * `bodies` (the `body` column of a keyword.db's chunk rows) under new ids (`prefix` + the old ones: chunk, document
 * and parent ids), grouped into runs of whole documents of at least `run` chunks each (the last one shorter), as the
 * indexer hands them to the keyword index. Grouped by document, not by adjacency: a document's parents have ids far
 * from its children once the index has been reclustered.
 */
function reidentifiedRuns(bodies, prefix, run) {
  const byDoc = new Map();
  for (const b of bodies) {
    const ch = JSON.parse(b);
    const re = (id) => (id ? `${prefix}${id}` : id);
    const out = { ...ch, chunk_id: re(ch.chunk_id), document_id: re(ch.document_id), ...(ch.parent_id ? { parent_id: re(ch.parent_id) } : {}) };
    if (!byDoc.has(out.document_id)) byDoc.set(out.document_id, []);
    byDoc.get(out.document_id).push(out);
  }
  const runs = [];
  let acc = [];
  for (const doc of byDoc.values()) {
    acc.push(...doc);
    if (acc.length >= run) {
      runs.push(acc);
      acc = [];
    }
  }
  if (acc.length) runs.push(acc);
  return { runs, documents: byDoc.size };
}

module.exports = { reidentifiedRuns };
