/**
 * What of an MCP upstream's answer may reach the client: its result, the message of its error and its
 * progress messages, with every credential of the source (`connection.secrets`: a stdio server's `env`
 * secrets, an HTTP server's credential) redacted by the one redaction module the OpenAPI executor uses too
 * (@gateway/runtime's redaction.ts; docs/security.md, "Responses an upstream echoes").
 *
 * Text goes anywhere in a result (content text, `structuredContent`, an embedded resource's text, a resource
 * link's uri, name and description, `_meta`, object keys): all of it is redacted. Bytes (an image's or
 * audio's `data`, an embedded resource's `blob`) cannot be redacted without corrupting them, so, as for an
 * OpenAPI binary response, a result whose bytes carry a credential is refused whole.
 *
 * Cost: nothing without secrets; otherwise one substring search per form over the result's JSON text, which
 * the response-size check has made already, and the base64 decoding of its binary blocks. Only a result that
 * does show a form is walked and copied.
 */
import { GatewayError } from '@gateway/core';
import {
  bytesContainSecret,
  jsonTextContainsSecret,
  redactJsonValue,
  redactText,
  textContainsSecret,
  type SecretForms,
} from '@gateway/runtime';

/** A `tools/call` result as an upstream sends it (see mcp-upstream.ts's UpstreamCallResult). */
type CallResult = { content: unknown[]; [key: string]: unknown };

/**
 * The result with every secret redacted (the very object when it holds none). `serialised` is
 * `JSON.stringify(result)`. Throws MCP_RESULT_CARRIES_CREDENTIAL when binary content carries one.
 */
export function redactMcpResult<Result extends CallResult>(
  result: Result,
  serialised: string,
  secrets: SecretForms,
  where: { sourceName: string; toolName: string },
): Result {
  if (secrets.forms.length === 0) return result;
  const binary = binaryCarryingSecret(result.content, secrets);
  if (binary !== undefined) {
    throw new GatewayError(
      'MCP_RESULT_CARRIES_CREDENTIAL',
      `the result of ${where.toolName} carries a credential of source '${where.sourceName}' in binary content (${binary}), ` +
        'which cannot be redacted; refused so it never reaches the client',
      { details: { source: where.sourceName } },
    );
  }
  if (!jsonTextContainsSecret(serialised, secrets)) return result;
  return redactJsonValue(result, secrets) as Result;
}

/** A progress notification's message, redacted (the same object when there is nothing to redact). */
export function redactProgress<Progress extends { message?: string }>(progress: Progress, secrets: SecretForms): Progress {
  if (secrets.forms.length === 0 || typeof progress.message !== 'string') return progress;
  const message = redactText(progress.message, secrets);
  return message === progress.message ? progress : { ...progress, message };
}

/** The first binary block whose bytes (or their base64 text) carry a form, named for the message; undefined if none. */
function binaryCarryingSecret(content: unknown[], secrets: SecretForms): string | undefined {
  if (!Array.isArray(content)) return undefined;
  for (const block of content) {
    if (block === null || typeof block !== 'object') continue;
    const { type, data, resource } = block as { type?: unknown; data?: unknown; resource?: { blob?: unknown } };
    const base64 = type === 'resource' ? resource?.blob : type === 'image' || type === 'audio' ? data : undefined;
    if (typeof base64 !== 'string') continue;
    // The text itself (a redaction would corrupt it) and the bytes it decodes to (where a hex or plain form hides).
    if (textContainsSecret(base64, secrets) || bytesContainSecret(Buffer.from(base64, 'base64'), secrets)) return `a ${type} block`;
  }
  return undefined;
}
