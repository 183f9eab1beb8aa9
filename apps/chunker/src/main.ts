import './tracing';
import { loadConfigOrExit } from '@rag/platform';
import { ChunkerModule, runStandalone } from '@rag/services';

// RAG_CONTEXTUAL_CHUNKS=on: the chunker calls the LLM (its RAG_LLM* settings) to write each chunk's context.
const config = loadConfigOrExit('chunker');
void runStandalone('chunker', [ChunkerModule], config.RAG_CONTEXTUAL_CHUNKS === 'on' ? ['bus', 'llm'] : ['bus'], { config });
