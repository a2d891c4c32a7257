/**
 * The application's error handler, inherited by every area that does not answer in a protocol of its own first
 * (OAuth bodies in authorization/, JSON-RPC on /mcp, the admin API's codes): a request its route's schema refuses is
 * 400 `REQUEST_INVALID`, a database still busy after the wait bound is 503 `DATABASE_BUSY` with Retry-After, both
 * problem+json. Every other error keeps Fastify's own handling.
 */
import type { FastifyInstance } from 'fastify';
import { BUSY_RETRY_AFTER_SECONDS, databaseBusyError, isDatabaseBusy } from '../store/sqlite/database.js';

/** Fastify's validation error: `validation` lists what failed, `validationContext` where (body, querystring…). */
export function isValidationError(error: unknown): error is Error & { validation: unknown[]; validationContext?: string } {
  return typeof error === 'object' && error !== null && Array.isArray((error as { validation?: unknown }).validation);
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
