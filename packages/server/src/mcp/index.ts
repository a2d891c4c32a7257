export * from './caller.js';
export * from './origin.js';
export * from './tools.js';
export * from './plugin.js';
