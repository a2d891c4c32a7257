/** The `telemetry` section of gateway.yaml (docs/observability.md, docs/config.md). */

/** The `service.name` of exported spans unless `telemetry.traces.serviceName` says otherwise. */
export const DEFAULT_TRACES_SERVICE_NAME = 'gateway';

export interface TelemetryConfig {
  metrics?: {
    /** Prometheus metrics (default true): `/metrics` behind the admin token, or on `listen`. */
    enabled?: boolean;
    /**
     * `host:port` of a listener of its own that serves only `/metrics`, without the admin token (for a scraper
     * on a private network); absent: `/metrics` on the gateway's listener, behind the admin token.
     */
    listen?: string;
  };
  traces?: {
    /** The OTLP/HTTP traces URL (e.g. `http://127.0.0.1:4318/v1/traces`); absent: no traces (the default). */
    endpoint?: string;
    /** `service.name` of the spans (default `gateway`). */
    serviceName?: string;
    /** Share of new traces kept when the client sent no sampled context (default 1: all). */
    sampleRatio?: number;
  };
}

export const telemetrySchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Prometheus metrics and OpenTelemetry traces (docs/observability.md)',
  properties: {
    metrics: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean', default: true, description: 'serve Prometheus metrics on /metrics' },
        listen: {
          type: 'string',
          minLength: 1,
          description: 'host:port of a listener serving only /metrics, without the admin token; absent: /metrics behind the admin token',
        },
      },
    },
    traces: {
      type: 'object',
      additionalProperties: false,
      properties: {
        endpoint: {
          type: 'string',
          pattern: '^https?://',
          description: 'OTLP/HTTP traces URL (e.g. http://127.0.0.1:4318/v1/traces); absent: traces are off',
        },
        serviceName: { type: 'string', minLength: 1, default: DEFAULT_TRACES_SERVICE_NAME, description: 'service.name of the spans' },
        sampleRatio: {
          type: 'number',
          minimum: 0,
          maximum: 1,
          default: 1,
          description: 'share of new traces kept (a client context that is sampled is always followed)',
        },
      },
    },
  },
} as const;
