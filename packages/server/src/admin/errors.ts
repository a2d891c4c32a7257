/**
 * How the admin API answers what no route handler answered: a JSON body it cannot read, a request its route's
 * schema refuses, a database still busy after the wait bound, an unknown route, and anything unexpected. Every
 * answer is problem+json with a registered code.
 */
import { isGatewayError } from '@gateway/core';
import type { FastifyInstance } from 'fastify';
import { exceedsJsonDepth } from '../mcp/json-depth.js';
import { BUSY_RETRY_AFTER_SECONDS, databaseBusyError, isDatabaseBusy } from '../store/sqlite/database.js';

/** How deeply an admin request's JSON body may nest (its bodies are flat objects). */
const ADMIN_BODY_MAX_DEPTH = 32;

/** An error the admin error handler answers as the client's (400) rather than the server's. */
function clientError(message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode: 400 });
}

/**
 * Admin bodies are small and flat: JSON is parsed here, after the token check (an onRequest hook), with the
 * nesting checked on the raw text first (the /mcp route's scan), so hostile input is a 400 problem.
 */
export function addAdminJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (exceedsJsonDepth(text, ADMIN_BODY_MAX_DEPTH)) {
      done(clientError(`the JSON body is nested deeper than ${ADMIN_BODY_MAX_DEPTH} levels`), undefined);
      return;
    }
    try {
      done(null, text === '' ? undefined : JSON.parse(text));
    } catch (error) {
      done(clientError(`the body is not valid JSON: ${(error as Error).message}`), undefined);
    }
  });
}

export function answerAdminErrors(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) =>
    reply.problem('ADMIN_ROUTE_NOT_FOUND', `no admin route ${request.method} ${request.url}`, { title: 'Not found' }),
  );

  app.setErrorHandler((error, request, reply) => {
    if ((error as { validation?: unknown }).validation) {
      return reply.problem('ADMIN_REQUEST_INVALID', (error as Error).message, { status: 400, title: 'Bad request' });
    }
    // The request's own fault, found before a handler ran (a body that is not JSON, too large, of another type).
    const status = (error as { statusCode?: unknown }).statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const title = status === 413 ? 'Body too large' : status === 415 ? 'Unsupported media type' : 'Bad request';
      return reply.problem('ADMIN_REQUEST_INVALID', (error as Error).message, { status, title });
    }
    if (isDatabaseBusy(error)) {
      const busy = databaseBusyError(error);
      request.log.warn({ code: busy.code, error: (error as Error).message }, 'database busy; admin request answered 503');
      return reply.problem(busy.code, busy.message, {
        title: 'Database busy',
        headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) },
      });
    }
    request.log.error({ code: isGatewayError(error) ? error.code : undefined, error: (error as Error).message }, 'admin request failed');
    return reply.problem(
      isGatewayError(error) ? error.code : 'INTERNAL_ERROR',
      isGatewayError(error) ? error.message : 'an unexpected error; see the server log',
      { status: 500, title: 'Admin request failed' },
    );
  });
}
