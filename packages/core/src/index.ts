export * from './errors.js';
export * from './model.js';
export * from './canonical.js';
export * from './lockfile.js';
export * from './json-schema-validator.js';
export * from './config/index.js';
export * from './proposal.js';
