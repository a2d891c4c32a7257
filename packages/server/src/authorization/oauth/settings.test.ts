import { describe, expect, it } from 'vitest';
import { parseConfig } from '@gateway/core';
import { authSettings } from './settings.js';

function settingsWith(clientsYaml: string) {
  const loaded = parseConfig(
    `gateway:\n  url: http://127.0.0.1:8080\nsources: {}\nauth:\n  clients:\n${clientsYaml}`,
    '/tmp/gateway-settings-test/gateway.yaml',
  );
  return () => authSettings(loaded);
}

describe('pre-registered clients (auth.clients)', () => {
  it('https, loopback http and private-use redirect URIs are accepted as configured', () => {
    const settings = settingsWith(
      [
        '    - clientId: desktop',
        '      name: Desktop app',
        '      redirectUris: [http://127.0.0.1/callback, com.example.desktop:/oauth]',
        '    - clientId: web',
        '      name: Web app',
        '      redirectUris: [https://app.example.com/oauth/callback]',
        '',
      ].join('\n'),
    )();
    expect(settings.clients.map((client) => client.clientId)).toEqual(['desktop', 'web']);
  });

  it.each([
    ['a fragment', 'https://app.example.com/callback#frag', 'must not contain a fragment'],
    ['plain http to another host', 'http://app.example.com/callback', 'http is allowed only for loopback'],
    ['user information', 'https://user@app.example.com/callback', 'must not contain user information'],
    ['a dangerous scheme', 'javascript:alert(1)', "scheme 'javascript:'"],
  ])('a redirect URI with %s stops start-up, naming its place in gateway.yaml', (_, uri, problem) => {
    const settings = settingsWith(
      ['    - clientId: web', '      name: Web app', `      redirectUris: [https://ok.example.com/cb, '${uri}']`, ''].join('\n'),
    );
    expect(settings).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(settings).toThrow("auth.clients[0].redirectUris[1] (client 'web')");
    expect(settings).toThrow(problem);
  });

  it('a client id listed twice stops start-up', () => {
    const settings = settingsWith(
      [
        '    - clientId: web',
        '      name: One',
        '      redirectUris: [https://one.example.com/cb]',
        '    - clientId: web',
        '      name: Two',
        '      redirectUris: [https://two.example.com/cb]',
        '',
      ].join('\n'),
    );
    expect(settings).toThrow("auth.clients[1]: the client id 'web' is listed twice");
  });
});
