export * from './dictionary';
export * from './translate';
