/**
 * The one problem+json reply (RFC 9457) of every HTTP surface that has no protocol of its own (the admin API, the
 * health routes, schema failures): `reply.problem(code, detail, extra?)`, a Fastify reply decorator. The code decides
 * the status when the error registry gives it one (`status` in core's error-codes.ts); otherwise the caller names it.
 * OAuth endpoints answer OAuth error bodies and `/mcp` JSON-RPC errors instead (docs/errors.md).
 */
import { STATUS_CODES } from 'node:http';
import { ERRORS, type ErrorCode, type ErrorSpec } from '@gateway/core';
import type { FastifyInstance, FastifyReply } from 'fastify';

export interface ProblemOptions {
  /** The HTTP status, when the code's registry entry has none or this case differs (413, 415…). */
  status?: number;
  /** A short summary of the problem type (default: the status's reason phrase). */
  title?: string;
  /** Headers that go with this answer (`retry-after`, `www-authenticate`). */
  headers?: Record<string, string>;
}

declare module 'fastify' {
  interface FastifyReply {
    /** Answers an RFC 9457 problem+json body `{ type, title, status, detail, code }`, never cached. */
    problem(code: ErrorCode, detail: string, options?: ProblemOptions): FastifyReply;
  }
}

/** The status a problem with this code answers with: the caller's, else the registry's, else 500 (a code never meant for HTTP). */
export function problemStatus(code: ErrorCode, status?: number): number {
  return status ?? (ERRORS[code] as ErrorSpec).status ?? 500;
}

/** The problem type URI of a code: stable, one per code. */
export function problemType(code: ErrorCode): string {
  return `https://gateway.dev/problems/${code.toLowerCase().replace(/_/g, '-')}`;
}

function problem(this: FastifyReply, code: ErrorCode, detail: string, options: ProblemOptions = {}): FastifyReply {
  const status = problemStatus(code, options.status);
  if (options.headers) this.headers(options.headers);
  return this.code(status)
    .header('content-type', 'application/problem+json; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(JSON.stringify({ type: problemType(code), title: options.title ?? STATUS_CODES[status] ?? 'Error', status, detail, code }));
}

/**
 * `reply.problem` on a reply that may lack the decorator: Fastify's framework errors (a path it cannot route) build
 * their reply before any instance's decorators apply.
 */
export function sendProblem(reply: FastifyReply, code: ErrorCode, detail: string, options?: ProblemOptions): FastifyReply {
  return problem.call(reply, code, detail, options);
}

/**
 * Adds `reply.problem` to this instance and everything registered in it. The application does it once at its root
 * (app.ts); an area registered on its own (a test's bare Fastify) does it for itself, and finding it there already
 * is not an error.
 */
export function addProblemReplies(instance: FastifyInstance): void {
  if (instance.hasReplyDecorator('problem')) return;
  instance.decorateReply('problem', problem);
}
