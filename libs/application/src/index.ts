export * from './ingestion';
export * from './query';
