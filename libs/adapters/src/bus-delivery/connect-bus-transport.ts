import type { INestApplication } from '@nestjs/common';
import { NestMicroservice, type MicroserviceOptions } from '@nestjs/microservices';
import { BUS, type Bus } from '@rag/ports';
import { PassBusErrorsThrough } from './bus-server';
import { createBusTransport } from './transport';

/**
 * Connects the bus as the application's Nest microservice transport and starts it: every `@EventPattern(Topic.X,
 * BUS_TRANSPORT, { group })` handler of the application's `*.message.controller.ts` classes is subscribed under its
 * group (Kafka's consumers in distributed mode, the embedded log's consume loops embedded: the same controllers in
 * both modes). Errors reach the bus unchanged (PassBusErrorsThrough), so its retry / hold / DLQ rules see the real
 * error. Call after `app.init()` and before `app.listen()`; Nest closes the transport (the consumers) before any store.
 */
export async function connectBusTransport(app: INestApplication): Promise<void> {
  const bus = app.get<Bus>(BUS, { strict: false });
  // Deferred, so that the filter is in place before Nest builds the handlers (it binds filters when it registers
  // them); then exactly what connectMicroservice does without deferring. The application ran its own init hooks.
  const microservice = app.connectMicroservice<MicroserviceOptions>({ strategy: createBusTransport(bus) }, { inheritAppConfig: false, deferInitialization: true });
  if (!(microservice instanceof NestMicroservice)) throw new Error('connectMicroservice did not return a NestMicroservice');
  microservice.useGlobalFilters(new PassBusErrorsThrough());
  microservice.registerListeners();
  microservice.setIsInitialized(true);
  microservice.setIsInitHookCalled(true);
  // This microservice only (startAllMicroservices would listen the others again); BusServer.listen is idempotent.
  await microservice.listen();
}
