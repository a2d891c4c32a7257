import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { answerRequestErrors } from './errors.js';
import { addProblemReplies, problemStatus } from './problem.js';
import { recordRoutes } from './route-inventory.js';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('reply.problem', () => {
  it('answers RFC 9457 problem+json whose status comes from the error registry', async () => {
    app = Fastify({ logger: false });
    addProblemReplies(app);
    app.get('/missing', async (_request, reply) => reply.problem('SESSION_NOT_FOUND', 'no session s-1'));
    const response = await app.inject({ url: '/missing' });
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.json()).toEqual({
      type: 'https://gateway.dev/problems/session-not-found',
      title: 'Not Found',
      status: 404,
      detail: 'no session s-1',
      code: 'SESSION_NOT_FOUND',
    });
  });

  it('the caller names the status of a code the registry gives none, and may set the title and headers', async () => {
    app = Fastify({ logger: false });
    addProblemReplies(app);
    app.get('/large', async (_request, reply) =>
      reply.problem('ADMIN_REQUEST_INVALID', 'too large', { status: 413, title: 'Body too large', headers: { 'retry-after': '1' } }),
    );
    const response = await app.inject({ url: '/large' });
    expect([response.statusCode, response.headers['retry-after']]).toEqual([413, '1']);
    expect(response.json()).toMatchObject({ status: 413, title: 'Body too large', code: 'ADMIN_REQUEST_INVALID' });
    expect([problemStatus('DATABASE_BUSY'), problemStatus('SOURCE_UNKNOWN', 404), problemStatus('SOURCE_UNKNOWN')]).toEqual([
      503, 404, 500,
    ]);
  });

  it('is added once: an area that adds it again under an application that has it is no error', async () => {
    app = Fastify({ logger: false });
    addProblemReplies(app);
    await app.register(async (child) => {
      addProblemReplies(child);
      child.get('/child', async (_request, reply) => reply.problem('DRIFT_DISABLED', 'off'));
    });
    expect((await app.inject({ url: '/child' })).statusCode).toBe(409);
  });
});

describe('schema failures', () => {
  it('a request a route schema refuses is 400 REQUEST_INVALID problem+json naming what failed, in every plugin', async () => {
    app = Fastify({ logger: false });
    addProblemReplies(app);
    answerRequestErrors(app);
    await app.register(async (child) => {
      child.get(
        '/items/:id',
        { schema: { params: { type: 'object', properties: { id: { type: 'integer' } } }, querystring: { type: 'object' } } },
        async () => ({ ok: true }),
      );
    });
    const response = await app.inject({ url: '/items/not-a-number' });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.json()).toMatchObject({ status: 400, code: 'REQUEST_INVALID' });
    expect(response.json().detail).toContain('params/id');
    expect((await app.inject({ url: '/items/7' })).json()).toEqual({ ok: true });
  });
});

describe('the route inventory', () => {
  it('records each route and method with the schema parts it declares', async () => {
    app = Fastify({ logger: false, exposeHeadRoutes: false });
    recordRoutes(app);
    app.get('/bare', async () => 'x');
    await app.register(
      async (child) => {
        child.route({
          method: ['GET', 'POST'],
          url: '/both',
          schema: { querystring: { type: 'object' }, headers: { type: 'object' } },
          handler: async () => 'x',
        });
      },
      { prefix: '/area' },
    );
    await app.ready();
    expect(app.routeRecords).toEqual([
      { method: 'GET', url: '/bare', schemaParts: [] },
      { method: 'GET', url: '/area/both', schemaParts: ['querystring', 'headers'] },
      { method: 'POST', url: '/area/both', schemaParts: ['querystring', 'headers'] },
    ]);
  });
});
