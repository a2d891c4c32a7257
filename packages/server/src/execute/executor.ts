import { isGatewayError, type LoadedConfig, type LockedOperation } from '@gateway/core';
import {
  bytesContainSecret,
  exchange,
  isExchangeTimeout,
  redactText,
  ResponseTooLarge,
  secretForms,
  type SecretForms,
} from '@gateway/runtime';
import type { Dispatcher } from 'undici';
import type { IndexedTool, OpenApiIndexedTool } from '../publications/registry.js';
import { executeMcpTool } from './mcp-call.js';
import type { McpUpstreamPool } from './mcp-upstream.js';
import { buildUpstreamRequest, type ExecutorCredentials, type UpstreamRequest } from './request.js';
import type { ToolCallContext, ToolCallOutcome, ToolResult } from './tool-call.js';

export type { ToolCallContext, ToolCallOutcome, ToolContent, ToolResult } from './tool-call.js';

/**
 * Resolves the credential material for one call. Declared here, by the executor that needs it, so the executor
 * does not depend on how credentials are found (credentials/index.ts's resolver fits this shape).
 */
export interface CredentialSource {
  resolve(
    sourceName: string,
    operation: LockedOperation,
    allowedLogins: ReadonlySet<string>,
    person?: string,
  ): Promise<ExecutorCredentials>;
  /** Drops cached tokens of a login after the upstream refused them (401), so the next call fetches new ones. */
  forgetTokens?(loginId: string): void;
}

export interface SourceLimits {
  connectMs: number;
  totalMs: number;
  maxResponseBytes: number;
}

export interface ExecutorOptions {
  credentials: CredentialSource;
  /** The connection pool for a source (keep-alive per origin; the SSRF guard lives in its connector). */
  dispatcherFor(sourceName: string): Dispatcher;
  limitsFor(sourceName: string): SourceLimits;
  /** Largest binary response embedded as base64 (default 1 MiB); bigger ones are refused. */
  maxBinaryBytes?: number;
  /** Same-origin redirects followed before giving up (default 3). */
  maxRedirects?: number;
  /** The upstream MCP servers of `kind: mcp` sources (absent when there are none). */
  mcpUpstreams?: McpUpstreamPool;
}

export interface Executor {
  execute(tool: IndexedTool, argumentsValue: unknown, context: ToolCallContext): Promise<ToolCallOutcome>;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_TOTAL_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 5 * 1024 * 1024;
const DEFAULT_MAX_BINARY_BYTES = 1024 * 1024;
/** Longest excerpt of an upstream error body shown to the client. */
export const ERROR_EXCERPT_CHARACTERS = 2_000;

/** Limits of a source from gateway.yaml, with the documented defaults. */
export function sourceLimits(loaded: LoadedConfig, sourceName: string): SourceLimits {
  const source = loaded.config.sources[sourceName];
  return {
    connectMs: source?.timeouts?.connectMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    totalMs: source?.timeouts?.totalMs ?? DEFAULT_TOTAL_TIMEOUT_MS,
    maxResponseBytes: source?.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
  };
}

/**
 * The executor: one entry point, dispatching on the tool's source kind (the switch is exhaustive, so a new
 * kind fails to compile until it has its module). OpenAPI tools run below; MCP tools in mcp-call.ts.
 */
export function createExecutor(options: ExecutorOptions): Executor {
  const openApi = createOpenApiExecutor(options);
  return {
    execute(tool, argumentsValue, context) {
      // Whatever the source kind, the upstream is never called with arguments the frozen inputSchema refuses.
      const check = tool.validate((argumentsValue ?? {}) as Record<string, unknown>);
      if (!check.ok) {
        const text = `invalid arguments for ${tool.name}:\n${check.problems.map((problem) => `- ${problem}`).join('\n')}`;
        return Promise.resolve({ result: errorResult(text), outcome: 'validation', loginId: null, durationMs: 0 });
      }
      switch (tool.kind) {
        case 'openapi':
          return openApi(tool, argumentsValue, context);
        case 'mcp':
          return executeMcpTool(options.mcpUpstreams, tool, argumentsValue, context);
      }
    },
  };
}

/**
 * Executes OpenAPI tools (arguments already validated): build the request from the frozen operation, call the upstream
 * through the source's pool, and turn the response into a tool result.
 */
function createOpenApiExecutor(
  options: ExecutorOptions,
): (tool: OpenApiIndexedTool, argumentsValue: unknown, context: ToolCallContext) => Promise<ToolCallOutcome> {
  const maxBinaryBytes = options.maxBinaryBytes ?? DEFAULT_MAX_BINARY_BYTES;
  const maxRedirects = options.maxRedirects ?? 3;

  async function execute(tool: OpenApiIndexedTool, argumentsValue: unknown, context: ToolCallContext): Promise<ToolCallOutcome> {
    const started = performance.now();
    const finish = (
      result: ToolResult,
      outcome: ToolCallOutcome['outcome'],
      extra: { upstreamStatus?: number; loginId?: string | null } = {},
    ): ToolCallOutcome => ({
      result,
      outcome,
      loginId: extra.loginId ?? null,
      ...(extra.upstreamStatus === undefined ? {} : { upstreamStatus: extra.upstreamStatus }),
      durationMs: performance.now() - started,
    });

    const argumentsObject = (argumentsValue ?? {}) as Record<string, unknown>;
    let credentials: ExecutorCredentials;
    try {
      credentials = await options.credentials.resolve(tool.sourceName, tool.operation, context.logins, context.person);
    } catch (error) {
      return finish(errorResult(`cannot call ${tool.name}: ${describe(error)}`), 'credentials');
    }
    const secrets = credentialForms(credentials);
    const redact = (value: string): string => redactText(value, secrets);

    let upstream: UpstreamRequest;
    try {
      upstream = buildUpstreamRequest(tool.operation, argumentsObject, credentials);
    } catch (error) {
      // An argument the schema allows but the request cannot carry (a path value of `..`) is the caller's error.
      if (isGatewayError(error) && error.category === 'usage') {
        return finish(errorResult(`invalid arguments for ${tool.name}:\n- ${describe(error)}`), 'validation', {
          loginId: credentials.loginId,
        });
      }
      return finish(errorResult(`cannot build the request for ${tool.name}: ${describe(error)}`), 'refused', {
        loginId: credentials.loginId,
      });
    }

    const limits = options.limitsFor(tool.sourceName);
    const dispatcher = options.dispatcherFor(tool.sourceName);
    const loginId = credentials.loginId;
    // One deadline for every hop together; the client's cancellation cuts the exchange in flight.
    const deadline = performance.now() + limits.totalMs;

    try {
      let current = upstream;
      for (let hop = 0; ; hop += 1) {
        const answer = exchange({
          dispatcher,
          url: current.url,
          method: current.method as Dispatcher.HttpMethod,
          // Traces on: the call's W3C context goes along, unless the operation's own request already sets it.
          headers: context.trace ? { ...context.trace, ...current.headers } : current.headers,
          body: current.body,
          timeoutMs: Math.max(1, Math.ceil(deadline - performance.now())),
          maxBodyBytes: limits.maxResponseBytes,
          overLimit: 'fail',
          signal: context.signal,
        });
        if (hop === 0) context.onSent?.();
        const response = await answer;
        const location = headerValue(response.headers.location);
        if (isRedirect(response.statusCode) && location) {
          const next = new URL(location, current.url);
          // Credentials stay with the origin they were configured for: a redirect elsewhere is not followed.
          if (next.origin !== current.url.origin) {
            return finish(
              errorResult(
                `${tool.name}: the upstream redirected (HTTP ${response.statusCode}) to another origin (${next.origin}); ` +
                  'the gateway does not follow cross-origin redirects so credentials never leave the configured upstream',
              ),
              'redirect',
              { upstreamStatus: response.statusCode, loginId },
            );
          }
          if (hop >= maxRedirects) {
            return finish(errorResult(`${tool.name}: the upstream redirected more than ${maxRedirects} times`), 'redirect', {
              upstreamStatus: response.statusCode,
              loginId,
            });
          }
          current = redirected(current, next, response.statusCode);
          continue;
        }
        if (response.statusCode === 401 && loginId) options.credentials.forgetTokens?.(loginId);
        const bytes = response.body;
        const contentType = headerValue(response.headers['content-type']) ?? '';
        const { result, outcome } = toToolResult(tool.name, response.statusCode, contentType, bytes, redact, maxBinaryBytes, (binary) =>
          bytesContainSecret(binary, secrets),
        );
        return finish(result, outcome, { upstreamStatus: response.statusCode, loginId });
      }
    } catch (error) {
      // The client went away or sent notifications/cancelled: the exchange was aborted, as an MCP call is.
      if (context.signal?.aborted) {
        return finish(errorResult(`${tool.name}: cancelled by the client`), 'cancelled', { loginId });
      }
      if (error instanceof ResponseTooLarge) {
        return finish(
          errorResult(
            `${tool.name}: the upstream response is larger than the limit of ${limits.maxResponseBytes} bytes ` +
              '(maxResponseBytes of the source) and was refused',
          ),
          'too-large',
          { loginId },
        );
      }
      if (isExchangeTimeout(error)) {
        return finish(errorResult(`${tool.name}: the upstream did not answer within ${limits.totalMs} ms (timeout)`), 'timeout', {
          loginId,
        });
      }
      return finish(errorResult(`${tool.name}: ${redact(networkMessage(error, upstream.url, limits))}`), 'network', { loginId });
    }
  }

  return execute;
}

function errorResult(message: string): ToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

function describe(error: unknown): string {
  if (isGatewayError(error)) return `${error.message} (${error.code})`;
  return (error as Error)?.message ?? String(error);
}

function networkMessage(error: unknown, url: URL, limits: SourceLimits): string {
  if (isGatewayError(error)) return `${error.message} (${error.code})`;
  const code = (error as { code?: string })?.code;
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const origin = url.origin;
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || cause?.code === 'UND_ERR_CONNECT_TIMEOUT') {
    return `could not connect to ${origin} within ${limits.connectMs} ms (connect timeout)`;
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return `the upstream at ${origin} did not answer within ${limits.totalMs} ms (timeout)`;
  }
  if (isGatewayError(cause)) return `${cause.message} (${cause.code})`;
  const reason = code ?? cause?.code ?? (error as Error)?.message ?? 'unknown error';
  return `could not reach the upstream at ${origin} (${reason})`;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/** RFC 9110 §15.4: 303 (and, by long practice, 301/302 after POST) continue with GET and no body. */
function redirected(previous: UpstreamRequest, next: URL, status: number): UpstreamRequest {
  const toGet = status === 303 || ((status === 301 || status === 302) && previous.method === 'POST');
  if (!toGet) return { ...previous, url: next };
  const headers = { ...previous.headers };
  delete headers['content-type'];
  return { method: previous.method === 'HEAD' ? 'HEAD' : 'GET', url: next, headers, body: undefined };
}

function mediaTypeOf(contentType: string): string {
  return contentType.split(';')[0]!.trim().toLowerCase();
}

function isJsonMediaType(mediaType: string): boolean {
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

function isTextMediaType(mediaType: string): boolean {
  return (
    mediaType.startsWith('text/') ||
    mediaType === 'application/xml' ||
    mediaType.endsWith('+xml') ||
    mediaType === 'application/yaml' ||
    mediaType === 'application/x-yaml' ||
    mediaType === 'application/javascript' ||
    mediaType === 'application/x-www-form-urlencoded' ||
    mediaType === 'application/x-ndjson' ||
    mediaType === 'application/jsonl'
  );
}

/** Stateless when used without `stream`, so one decoder serves every call. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

function reasonPhrase(status: number): string {
  return STATUS_TEXT[status] ?? '';
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/**
 * Maps an upstream response to a tool result: JSON → `structuredContent` plus the JSON text; other text →
 * text; binary → an embedded resource (base64) up to `maxBinaryBytes`; 4xx/5xx → `isError` with the status
 * and a bounded excerpt. The outcome says which.
 */
export function toToolResult(
  toolName: string,
  status: number,
  contentType: string,
  bytes: Buffer,
  redact: (text: string) => string,
  maxBinaryBytes: number,
  containsSecret: (bytes: Buffer) => boolean = () => false,
): { result: ToolResult; outcome: ToolCallOutcome['outcome'] } {
  const ok = (result: ToolResult) => ({ result, outcome: 'ok' as const });
  const mediaType = mediaTypeOf(contentType);
  const textBody =
    bytes.length === 0 ? '' : isJsonMediaType(mediaType) || isTextMediaType(mediaType) || !mediaType ? decodeUtf8(bytes) : undefined;
  if (status >= 400) {
    const excerpt =
      textBody === undefined
        ? `(${bytes.length} bytes of ${mediaType || 'binary data'})`
        : textBody.length > ERROR_EXCERPT_CHARACTERS
          ? `${redact(textBody).slice(0, ERROR_EXCERPT_CHARACTERS)}… (${bytes.length} bytes in all)`
          : redact(textBody);
    const phrase = reasonPhrase(status);
    const text = `${toolName}: the upstream answered HTTP ${status}${phrase ? ` ${phrase}` : ''}${excerpt ? `\n${excerpt}` : ''}`;
    return { result: errorResult(text), outcome: 'upstream-error' };
  }
  if (bytes.length === 0) {
    return ok({ content: [{ type: 'text', text: `HTTP ${status} (no content)` }] });
  }
  if (isJsonMediaType(mediaType) && textBody !== undefined) {
    const safeText = redact(textBody);
    try {
      return ok({ content: [{ type: 'text', text: safeText }], structuredContent: JSON.parse(safeText) });
    } catch {
      return ok({ content: [{ type: 'text', text: safeText }] });
    }
  }
  if (textBody !== undefined) return ok({ content: [{ type: 'text', text: redact(textBody) }] });
  if (containsSecret(bytes)) {
    // Bytes cannot be redacted without corrupting them: a binary answer that carries a credential is refused.
    const text =
      `${toolName}: the upstream's ${mediaType || 'binary'} response contains a credential of this call; ` +
      'refused so it never reaches the client';
    return { result: errorResult(text), outcome: 'credential-echoed' };
  }
  if (bytes.length > maxBinaryBytes) {
    const text =
      `${toolName}: the upstream answered ${bytes.length} bytes of ${mediaType || 'binary data'}, more than the ${maxBinaryBytes}-byte ` +
      'limit for binary content; refused';
    return { result: errorResult(text), outcome: 'too-large' };
  }
  return ok({
    content: [
      {
        type: 'resource',
        // A synthetic URI: the real request URL may carry a query credential.
        resource: {
          uri: `gateway://tools/${toolName}/response`,
          mimeType: mediaType || 'application/octet-stream',
          blob: bytes.toString('base64'),
        },
      },
    ],
  });
}

/** The call's credential values (headers, query, cookies) in every form an upstream may echo them. */
function credentialForms(credentials: ExecutorCredentials): SecretForms {
  return secretForms([...Object.values(credentials.headers), ...Object.values(credentials.query), ...Object.values(credentials.cookies)]);
}
