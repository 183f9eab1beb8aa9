export const AUTH = Symbol('AUTH');
