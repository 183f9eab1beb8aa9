import './tracing';
import { ChunkerModule, runStandalone } from '@rag/services';

void runStandalone('chunker', [ChunkerModule], ['bus']);
