export * from './kafka-bus.adapter';
export * from './kafka.transport';
