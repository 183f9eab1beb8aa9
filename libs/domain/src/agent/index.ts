export * from './action';
export * from './steps';
export * from './router';
export * from './prompt';
