export * from './schema.js';
export * from './load.js';
export * from './auth-schema.js';
export * from './receipts-schema.js';
export * from './webhooks-schema.js';
