export * from './ingestion';
export * from './query';
export * from './sources';
export * from './integrity';
