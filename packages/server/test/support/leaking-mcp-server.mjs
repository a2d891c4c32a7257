// An MCP server (SDK v2) that echoes the credentials it was given, for the redaction tests: over stdio the
// value of its LEAKED_SECRET environment variable, over Streamable HTTP the Authorization header of the request
// (and the token in it). Its one tool, `leak`, answers each value in plain, base64, base64url, hex and
// percent-encoded form, in the place `where` names, and quotes it in the tool's description. Run as `node leaking-mcp-server.mjs stdio` or
// `node leaking-mcp-server.mjs http` (it then prints `listening <port>` on stdout, on 127.0.0.1).
import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, Server } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

export const PLACES = ['text', 'structured', 'resource', 'link', 'is-error', 'error', 'progress', 'blob', 'image', 'clean-blob'];

/** The five encodings every value is echoed in. */
function encodings(value) {
  const bytes = Buffer.from(value, 'utf8');
  return {
    plain: value,
    base64: bytes.toString('base64'),
    base64url: bytes.toString('base64url'),
    hex: bytes.toString('hex'),
    percent: encodeURIComponent(value),
  };
}

/** The values a request of this transport was given: the env secret, or the Authorization header and its token. */
function leakedValues(context) {
  const header = context.http?.req?.headers.get('authorization');
  if (header) return [header, header.slice(header.indexOf(' ') + 1)];
  return [process.env.LEAKED_SECRET ?? ''];
}

async function leak(where, context) {
  const values = leakedValues(context);
  const all = values.flatMap((value) => Object.values(encodings(value)));
  const text = all.join('\n');
  switch (where) {
    case 'text':
      return { content: [{ type: 'text', text }, ...all.map((form) => ({ type: 'text', text: `echo: ${form}` }))] };
    case 'structured': {
      const structured = { echoes: values.map(encodings), [values[0]]: 'a key', nested: { list: all } };
      return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
    }
    case 'resource':
      return {
        content: [{ type: 'resource', resource: { uri: `secret://echo/${encodings(values[0]).percent}`, mimeType: 'text/plain', text } }],
      };
    case 'link': {
      const forms = encodings(values[0]);
      return {
        content: [
          {
            type: 'resource_link',
            uri: `https://echo.example/${forms.percent}?hex=${forms.hex}`,
            name: forms.base64url,
            title: forms.plain,
            description: `${forms.base64} ${text}`,
            mimeType: 'text/plain',
          },
        ],
      };
    }
    case 'is-error':
      return { content: [{ type: 'text', text: `refused: ${text}` }], isError: true };
    case 'error':
      throw new Error(`upstream failure: ${all.join(' ')}`);
    case 'progress': {
      const progressToken = context.mcpReq._meta?.progressToken;
      if (progressToken !== undefined) {
        for (const [index, form] of all.entries()) {
          await context.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress: index + 1, total: all.length + 1, message: `step ${form}` },
          });
          // One message per read: a client settles a result before progress that arrives in the same chunk.
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
      return { content: [{ type: 'text', text: 'done' }] };
    }
    case 'blob':
      // The value itself inside bytes: a binary block cannot be redacted.
      return {
        content: [
          {
            type: 'resource',
            resource: {
              uri: 'file:///report.bin',
              mimeType: 'application/octet-stream',
              blob: Buffer.concat([Buffer.from([0, 255]), Buffer.from(values.at(-1)), Buffer.from([254])]).toString('base64'),
            },
          },
        ],
      };
    case 'image':
      // The value's hex inside an image's bytes.
      return {
        content: [{ type: 'image', mimeType: 'image/png', data: Buffer.from(`\x89PNG${encodings(values.at(-1)).hex}`).toString('base64') }],
      };
    case 'clean-blob':
      return {
        content: [
          { type: 'resource', resource: { uri: 'file:///clean.bin', mimeType: 'application/octet-stream', blob: 'AAEC/w==' } },
          { type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' },
        ],
      };
    default:
      throw new Error(`unknown place ${where}`);
  }
}

function newServer() {
  const server = new Server({ name: 'leaking', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', async (_request, context) => ({
    tools: [
      {
        name: 'leak',
        // A description that quotes the credential would reach tools.lock, the drift store and every client.
        description: `Echoes the credential it was given (${Object.values(encodings(leakedValues(context)[0])).join(', ')}).`,
        inputSchema: { type: 'object', properties: { where: { type: 'string', enum: PLACES } }, required: ['where'] },
      },
    ],
  }));
  server.setRequestHandler('tools/call', async (request, context) => leak(String(request.params.arguments?.where), context));
  return server;
}

if (process.argv[2] === 'stdio') {
  // A stderr line a log would keep: the gateway redacts it before logging.
  process.stderr.write(`starting with ${process.env.LEAKED_SECRET} (${Buffer.from(process.env.LEAKED_SECRET ?? '').toString('hex')})\n`);
  await newServer().connect(new StdioServerTransport());
} else if (process.argv[2] === 'http') {
  const node = toNodeHandler(createMcpHandler(newServer, { legacy: 'stateless' }));
  const server = createServer((request, response) => {
    if (!request.headers.authorization) {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    void node(request, response);
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
}
