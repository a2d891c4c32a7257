export {};
export * from './vault/index.js';
export * from './network/index.js';
export * from './credentials/index.js';
export * from './publications/index.js';
export * from './execute/index.js';
export * from './mcp/index.js';
export * from './app.js';
export * from './gateway.js';
