/**
 * @gateway/server's public surface: what `gateway serve` (and the benchmarks) need to start a gateway. Nothing
 * else leaves the package; the CLI reaches a running server through its admin API (admin/index.ts). `gateway
 * doctor` asks it how the storage stands (`storageFindings`): the server owns the stores and their migrations.
 */
export { startGateway, type RunningGateway, type StartGatewayOptions } from './gateway.js';
export { createGatewayLogger } from './logger.js';
export { storageFindings } from './storage.js';
export {
  currentWorkerId,
  isRestartedWorker,
  parseWorkers,
  superviseWorkers,
  type WorkerMessage,
} from './cluster.js';
export { SEMI_SPACE_FLAG, SEMI_SPACE_MB, choosesSemiSpace, servingExecArgv } from '@gateway/runtime/node-flags';
