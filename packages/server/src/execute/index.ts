/** The executor: one tool call → one upstream request, with the credentials the session may use. */
export { createExecutor, sourceLimits, type Executor } from './executor.js';
export { NO_CREDENTIALS, type ExecutorCredentials } from './request.js';
