import { GeneratorModule, runStandalone } from '@rag/services';

void runStandalone('generator', [GeneratorModule], ['llm']);
