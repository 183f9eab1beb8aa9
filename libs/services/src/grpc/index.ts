export * from './grpc-errors';
export * from './grpc-mapping';
export * from './health';
export * from './grpc-server';
export * from './query-path.grpc.controller';
export * from './query-path.grpc.client';
export * from './grpc-query-path.module';
