export * from './deliver-with-retries';
