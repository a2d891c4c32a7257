export * from './schema.js';
export * from './load.js';
export * from './auth-schema.js';
