export * from './grpc-errors';
export * from './grpc-mapping';
export * from './grpc-server';
export * from './query-path.grpc.client';
export * from './grpc-query-path.module';
