import type { MessageBroker } from '@rag/ports';
import { ValidatingBus } from './bus-client';
import { BusServer } from './bus-server';

/**
 * The Nest transport strategy that consumes for a bus: a bus that owns its consumers exposes them as `transport`
 * (KafkaBus → KafkaTransport); for the embedded log bus (and any other Bus) the strategy subscribes through the bus.
 * (Duck-typed rather than `instanceof KafkaBus`, so this module does not load kafkajs in an embedded process.)
 */
export function createBusTransport(bus: MessageBroker): BusServer {
  const broker = bus instanceof ValidatingBus ? bus.broker : bus;
  const own = (broker as { transport?: unknown }).transport;
  return own instanceof BusServer ? own : new BusServer(broker);
}
