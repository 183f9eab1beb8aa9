export * from './filters';
export * from './text';
export * from './loading';
export * from './chunking';
export * from './retrieval';
export * from './generation';
export * from './eval';
export * from './sources';
