export * from './topics';
export * from './common';
export * from './document';
export * from './events';
export * from './api';
export * from './query';
export * from './sources';
export * from './grpc';
// Test data factories shared by every layer's specs (one Chunk literal, not one per suite).
export * from './testing';
// Types only: the generated file also holds NestJS decorators, and loading @nestjs/microservices into every importer
// of the contracts (the domain included) is not wanted; the services apply @GrpcMethod themselves.
export type * as RagV1 from './generated/rag';
