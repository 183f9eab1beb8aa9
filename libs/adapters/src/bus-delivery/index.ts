export * from './deliver-with-retries';
export * from './bus-server';
export * from './bus-client';
export * from './transport';
export * from './connect-bus-transport';
