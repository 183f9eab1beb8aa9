export * from './kafka-bus.adapter';
export { backoffMs, decodeHeaders, decodeValue, deliverWithRetries, nextOffset, partitionLag, type DeliveryOutcome, type RetryPolicy } from './delivery';
