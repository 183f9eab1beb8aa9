export const AUTH = Symbol('AUTH');
export const RATE_LIMITER = Symbol('RATE_LIMITER');
