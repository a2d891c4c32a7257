export * from './serialise.js';
export * from './request.js';
export * from './executor.js';
