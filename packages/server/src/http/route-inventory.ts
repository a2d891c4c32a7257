/**
 * Every route the application registers, with the parts of its schema, recorded as it is registered (Fastify's
 * onRoute hook, installed at the root before any area). The route-schema test reads it to fail on a route without
 * a schema; the list is small (one entry per route and method) and fixed once the application is ready.
 */
import type { FastifyInstance } from 'fastify';

export interface RouteRecord {
  method: string;
  url: string;
  /** The schema parts the route declares (`params`, `querystring`, `body`, `headers`, `response`). */
  schemaParts: string[];
}

const SCHEMA_PARTS = ['params', 'querystring', 'body', 'headers', 'response'] as const;

declare module 'fastify' {
  interface FastifyInstance {
    /** The routes registered so far, with their schema parts (http/route-inventory.ts). */
    routeRecords: readonly RouteRecord[];
  }
}

export function recordRoutes(app: FastifyInstance): void {
  const records: RouteRecord[] = [];
  app.decorate('routeRecords', records);
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ?? {}) as Record<string, unknown>;
    const schemaParts = SCHEMA_PARTS.filter((part) => schema[part] !== undefined);
    for (const method of [route.method].flat()) records.push({ method, url: route.url, schemaParts });
  });
}
