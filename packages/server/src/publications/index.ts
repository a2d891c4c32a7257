export * from './annotations.js';
export * from './registry.js';
export * from './lock-watcher.js';
