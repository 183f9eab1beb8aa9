export * from './log-bus.adapter';
