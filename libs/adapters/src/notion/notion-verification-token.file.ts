import { chmod, open, readFile, writeFile } from 'node:fs/promises';

/**
 * Keeps the token of Notion's unsigned verification request in one private file (`mode 0600`) while
 * RAG_NOTION_WEBHOOK_SECRET is not set. First one wins: the file is created exclusively (`O_CREAT|O_EXCL`, atomic
 * also between processes on one host), so a later unsigned request cannot replace the token; an operator resets it
 * by configuring the secret or by deleting the file. The token is never logged.
 */
export class NotionVerificationTokenFile {
  constructor(readonly file: string) {}

  async storeIfAbsent(token: string): Promise<{ stored: boolean; current: string; where: string }> {
    try {
      const fh = await open(this.file, 'wx', 0o600);
      try {
        await fh.writeFile(token + '\n');
        await fh.chmod(0o600); // the umask may have narrowed or widened the mode given to open
        await fh.sync();
      } finally {
        await fh.close();
      }
      return { stored: true, current: token, where: this.file };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const current = (await readFile(this.file, 'utf8')).trim();
    if (!current) {
      // an empty file is what a crash between create and write leaves: no token was ever kept
      await writeFile(this.file, token + '\n', { mode: 0o600 });
      await chmod(this.file, 0o600);
      return { stored: true, current: token, where: this.file };
    }
    return { stored: false, current, where: this.file };
  }
}
