export * from './kafka-bus.adapter';
