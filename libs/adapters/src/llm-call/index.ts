export * from './call-deadline';
