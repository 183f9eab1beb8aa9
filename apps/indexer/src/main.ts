import './tracing';
import { IndexerModule, runStandalone } from '@rag/services';

void runStandalone('indexer', [IndexerModule], ['bus', 'registry', 'vectors', 'keywords']);
