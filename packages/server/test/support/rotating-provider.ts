import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A provider's token endpoint (with discovery) that rotates refresh tokens, as providers that detect reuse do: each
 * refresh token works once, and a second use is `invalid_grant`. Slow enough (100 ms) for two refreshes to overlap.
 */
export async function rotatingProvider() {
  let current = 'rt-alice';
  let generation = 0;
  const grants: string[] = [];
  const server = createServer((request, response) => {
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const json = (status: number, body: object) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (request.method === 'GET' && request.url?.startsWith('/.well-known/')) {
      return json(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const form = new URLSearchParams(body);
      const used = form.get('refresh_token') ?? '';
      grants.push(used);
      setTimeout(() => {
        if (form.get('grant_type') !== 'refresh_token' || used !== current) return json(400, { error: 'invalid_grant' });
        generation += 1;
        current = `rt-alice-${generation}`;
        json(200, {
          access_token: `at-alice-${generation}`,
          token_type: 'Bearer',
          expires_in: 3600,
          refresh_token: current,
          scope: 'openid',
        });
      }, 100);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    issuer: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    grants,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
