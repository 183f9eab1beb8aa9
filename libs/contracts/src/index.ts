export * from './topics';
export * from './common';
export * from './document';
export * from './events';
export * from './api';
export * from './query';
export * from './sources';
export * as RagV1 from './generated/rag';
