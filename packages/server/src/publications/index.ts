/** The publications in use: the verified lock indexed for /mcp, and the watcher that swaps in each new one. */
export { PublicationRegistry, type IndexedTool } from './registry.js';
export { watchLock, type LockWatcher } from './lock-watcher.js';
