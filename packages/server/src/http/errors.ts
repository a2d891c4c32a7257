/**
 * The application's error handler, inherited by every area that does not answer in a protocol of its own first
 * (OAuth bodies in authorization/, JSON-RPC on /mcp, the admin API's codes): a request its route's schema refuses is
 * 400 `REQUEST_INVALID`, a database still busy after the wait bound is 503 `DATABASE_BUSY` with Retry-After, both
 * problem+json. Every other error keeps Fastify's own handling.
 */
import { errorCodes, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { sendProblem } from './problem.js';
import { BUSY_RETRY_AFTER_SECONDS, databaseBusyError, isDatabaseBusy } from '../store/sqlite/database.js';

/** Fastify's validation error: `validation` lists what failed, `validationContext` where (body, querystring…). */
export function isValidationError(error: unknown): error is Error & { validation: unknown[]; validationContext?: string } {
  return typeof error === 'object' && error !== null && Array.isArray((error as { validation?: unknown }).validation);
}

/** The longest path parameter Fastify routes (its `maxParamLength`, set from here so the refusal below says it). */
export const MAX_PATH_PARAMETER_LENGTH = 100;

/**
 * Fastify's `frameworkErrors`: a path it cannot route, answered as problem+json like every other refusal. Fastify's
 * own answer is JSON that repeats the path (an approval id of 500 characters came back whole); this one names the
 * rule, not the input.
 */
export function answerFrameworkError(error: Error, _request: FastifyRequest, reply: FastifyReply): void {
  if (error instanceof errorCodes.FST_ERR_MAX_PARAM_LENGTH) {
    sendProblem(reply, 'REQUEST_PATH_INVALID', `a segment of the request path is longer than ${MAX_PATH_PARAMETER_LENGTH} characters`, {
      status: 414,
      title: 'URI too long',
    });
    return;
  }
  sendProblem(reply, 'REQUEST_PATH_INVALID', 'the request path is not a valid URL (malformed percent-encoding)', { title: 'Bad request' });
}

export function answerRequestErrors(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    if (isValidationError(error)) {
      return reply.problem('REQUEST_INVALID', error.message, { title: 'Invalid request' });
    }
    if (!isDatabaseBusy(error)) throw error;
    const busy = databaseBusyError(error);
    request.log.warn({ code: busy.code, error: (error as Error).message }, 'database busy; answered 503');
    return reply.problem(busy.code, busy.message, {
      title: 'Service unavailable',
      headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) },
    });
  });
}
