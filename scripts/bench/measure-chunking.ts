/**
 * Cost of chunking a JSONL corpus (one `{"_id","title","text"}` per line, e.g. Cranfield), printed, not
 * asserted. Not a test and not exported:
 *
 *   npx vite-node --config vitest.config.ts scripts/bench/measure-chunking.ts -- path/to/corpus.jsonl
 *
 * Lives here, not in libs/domain, because it reads a file (node:fs) and the domain imports no Node built-in.
 */
import { readFileSync } from 'node:fs';
import type { StructuredDocument } from '@rag/contracts';
import { chunkDocument, countTokens, DEFAULT_CHUNK_OPTIONS } from '@rag/domain';

function main(): void {
  const path = process.argv.slice(2).find((a) => a !== '--');
  if (!path) throw new Error('usage: measure-chunking.ts <corpus.jsonl>');
  const docs: StructuredDocument[] = readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((line) => {
      const r = JSON.parse(line) as { _id: string; title?: string; text: string };
      return {
        document_id: `corpus:${r._id}`,
        tenant: 'default',
        version: 1,
        title: r.title ?? '',
        mime_type: 'text/plain',
        content_hash: '0'.repeat(64),
        acl: ['*'],
        metadata: {},
        blocks: r.text.split(/\n\s*\n/).map((text) => ({ type: 'paragraph' as const, text })),
      };
    });
  const chars = docs.reduce((n, d) => n + d.blocks.reduce((m, b) => m + (b.type === 'paragraph' ? b.text.length : 0), 0), 0);

  let t = performance.now();
  countTokens('warm up the encoder');
  console.log(`encoder init: ${(performance.now() - t).toFixed(0)} ms`);

  for (const [label, opts] of [
    ['defaults 200/30/800', DEFAULT_CHUNK_OPTIONS],
    ['children only 200/30/0', { ...DEFAULT_CHUNK_OPTIONS, parentTokens: 0 }],
    ['small 64/16/256', { chunkTokens: 64, overlapTokens: 16, parentTokens: 256 }],
  ] as const) {
    for (const run of ['first', 'second']) {
      t = performance.now();
      let chunks = 0;
      let children = 0;
      for (const d of docs) {
        const out = chunkDocument(d, opts);
        chunks += out.length;
        children += out.filter((c) => c.kind === 'child').length;
      }
      const ms = performance.now() - t;
      console.log(`${label} (${run} run): ${docs.length} docs, ${(chars / 1e6).toFixed(2)} M chars -> ${chunks} chunks (${children} children) in ${ms.toFixed(0)} ms`);
    }
  }
}

main();
