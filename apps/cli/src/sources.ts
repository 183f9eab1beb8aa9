import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { parseJsonl } from '@rag/domain';

/** One document to ingest, from a file or a line of a `.jsonl` file. */
export interface SourceDoc {
  id: string;
  title?: string;
  text?: string;
  bytes?: Buffer;
  filename?: string;
  metadata?: Record<string, string | number | boolean | string[]>;
}

export interface SourceProblem {
  where: string;
  error: string;
}

const EXTENSIONS = new Set(['.txt', '.md', '.markdown', '.html', '.htm', '.pdf', '.docx', '.jsonl']);

/** Expands files and folders (recursively, supported extensions only) into documents; `.jsonl` → one per line. */
export function collectSources(paths: string[]): { docs: SourceDoc[]; problems: SourceProblem[] } {
  const docs: SourceDoc[] = [];
  const problems: SourceProblem[] = [];
  const visit = (p: string, explicit: boolean) => {
    let st;
    try {
      st = statSync(p);
    } catch {
      problems.push({ where: p, error: 'no such file or folder' });
      return;
    }
    if (st.isDirectory()) {
      for (const entry of readdirSync(p).sort()) if (!entry.startsWith('.')) visit(join(p, entry), false);
      return;
    }
    const ext = extname(p).toLowerCase();
    if (!EXTENSIONS.has(ext)) {
      if (explicit) problems.push({ where: p, error: `unsupported file type ${ext || '(none)'}` });
      return;
    }
    if (ext === '.jsonl') {
      const parsed = parseJsonl(readFileSync(p, 'utf8'));
      for (const e of parsed.errors) problems.push({ where: `${p}:${e.line}`, error: e.error });
      for (const d of parsed.docs) docs.push({ id: d._id, title: d.title || undefined, text: d.text, ...(d.metadata ? { metadata: d.metadata } : {}) });
      return;
    }
    docs.push({ id: `file:${resolve(p)}`, filename: basename(p), bytes: readFileSync(p) });
  };
  for (const p of paths) visit(resolve(p), true);
  return { docs, problems };
}
