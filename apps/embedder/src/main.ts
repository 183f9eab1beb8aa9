import { EmbedderModule, runStandalone } from '@rag/services';

void runStandalone('embedder', [EmbedderModule], ['bus', 'embedder']);
