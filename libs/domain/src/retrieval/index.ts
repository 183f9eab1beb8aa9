export * from './rrf';
export * from './version-fence';
export * from './parents';
export * from './normalize-query';
export * from './query-expansion';
export * from './score-fusion';
export * from './script-routing';
export * from './hit-order';
