import { prepareModels } from '@rag/adapters';
import { AppError, type AppConfig } from '@rag/platform';

/** Fetches/verifies the configured embedding models; a problem ends the process with one clear line (exit 2). */
export async function prepareModelsOrExit(cfg: AppConfig, name: string): Promise<void> {
  try {
    await prepareModels(cfg);
  } catch (e) {
    if (e instanceof AppError) {
      process.stderr.write(`${name}: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
}
