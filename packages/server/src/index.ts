export {};
export * from './vault/index.js';
export * from './network/index.js';
export * from './credentials/index.js';
