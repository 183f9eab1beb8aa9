import { resolve } from 'node:path';
import { Command } from 'commander';
import { copySqliteIntoPostgres } from '@rag/adapters';
import type { AppConfig } from '@rag/platform';

/**
 * `rag db copy-sqlite [--from DIR]`: moves an installation's shared state from SQLite (RAG_DATA_DIR/registry.db and
 * api-keys.db) into the PostgreSQL database of RAG_DATABASE_URL, for the distributed mode. One transaction; refuses a
 * database that already holds documents, keys or source state. Stop the platform using the folder first. Prints the
 * copied row counts as JSON.
 */
export function dbCommand(config: () => AppConfig, out: (s: string) => void = (s) => process.stdout.write(s)): Command {
  const db = new Command('db').description('shared state in PostgreSQL (RAG_DATABASE_URL)');
  db.command('copy-sqlite')
    .description('copy the registry, API keys and source state of a SQLite data folder into PostgreSQL (an empty database)')
    .option('--from <dir>', 'the data folder holding registry.db and api-keys.db (default RAG_DATA_DIR)')
    .action(async (o: { from?: string }) => {
      const cfg = config();
      const from = o.from ? resolve(o.from) : cfg.dataDir;
      const report = await copySqliteIntoPostgres(cfg, from);
      out(JSON.stringify({ from, copied: report }) + '\n');
    });
  return db;
}
