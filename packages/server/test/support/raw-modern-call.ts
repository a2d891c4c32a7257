/**
 * One 2026-07-28 `tools/call` as raw JSON-RPC over HTTP, declaring the `elicitation.url` capability: what a test
 * needs to send a `requestState` the SDK client would never send (a forged one, one of other arguments).
 */
export async function rawModernCall(
  mcpUrl: string,
  headers: Record<string, string>,
  name: string,
  argumentsValue: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string } }> {
  const response = await fetch(mcpUrl, {
    method: 'POST',
    headers: {
      ...headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name,
        arguments: argumentsValue,
        ...extra,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } },
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
        },
      },
    }),
  });
  const text = await response.text();
  const json = text.startsWith('{')
    ? text
    : text
        .split('\n')
        .find((line) => line.startsWith('data: '))!
        .slice(6);
  return JSON.parse(json) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
}
