import { describe, expect, it } from 'vitest';
import { parseConfig } from './load.js';

function problemOf(sourceYaml: string): string {
  const text = `gateway:\n  url: http://127.0.0.1:8080\nsources:\n  a:\n${sourceYaml}`;
  try {
    parseConfig(text, 'gateway.yaml');
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('gateway.yaml errors name the key, the line and the allowed values', () => {
  it('an unknown source kind names the kinds there are, not "must be equal to constant"', () => {
    const message = problemOf('    kind: mcpx\n    document: x\n');
    expect(message).toMatch(/^gateway\.yaml:5: sources\.a\.kind: must be/);
    expect(message).toContain('"openapi"');
    expect(message).not.toContain('equal to constant');
  });

  it('an unknown credential type lists every type any branch accepts', () => {
    const message = problemOf('    kind: openapi\n    document: x\n    credentials:\n      k: { type: foo, secret: s }\n');
    expect(message).toContain(
      'sources.a.credentials.k.type: must be one of ["none","apiKey","bearer","basic","oauthClientCredentials","oauthPerson"]',
    );
  });

  it("a known credential type reports its own branch's problem, not another branch's", () => {
    const message = problemOf('    kind: openapi\n    document: x\n    credentials:\n      k: { type: basic, secret: s }\n');
    expect(message).toContain("sources.a.credentials.k: missing required key 'username'");
    expect(message).not.toContain('unknown key');
  });
});

describe('oauthPerson credentials', () => {
  const person = (fields: string, vault = '') =>
    'gateway:\n  url: http://127.0.0.1:8080\nsources:\n  a:\n    kind: openapi\n    document: x\n    credentials:\n' +
    `      k: { type: oauthPerson, clientId: c, secret: s${fields} }\n${vault}`;
  const refusal = (text: string) => {
    try {
      parseConfig(text, 'gateway.yaml');
    } catch (error) {
      return error as Error & { code: string };
    }
    throw new Error('expected the configuration to be refused');
  };

  it('is accepted with an issuer, or with both endpoint URLs, and the file vault', () => {
    const loaded = parseConfig(
      person(', issuer: https://id.example.com, scopes: [read], resource: https://api.example.com'),
      'gateway.yaml',
    );
    const source = loaded.config.sources.a!;
    expect(source.kind === 'openapi' && source.credentials?.k).toMatchObject({ type: 'oauthPerson', issuer: 'https://id.example.com' });
    expect(() =>
      parseConfig(person(', authorizationUrl: https://id.example.com/a, tokenUrl: https://id.example.com/t'), 'g.yaml'),
    ).not.toThrow();
  });

  it('needs exactly one way to find the provider', () => {
    expect(refusal(person('')).message).toContain("needs either 'issuer' (discovery) or both 'authorizationUrl' and 'tokenUrl'");
    expect(refusal(person(', authorizationUrl: https://id.example.com/a')).code).toBe('CONFIG_INVALID');
  });

  it('with a read-only vault is a configuration error naming the options', () => {
    const error = refusal(person(', issuer: https://id.example.com', 'vault:\n  provider: env\n'));
    expect(error.code).toBe('PERSON_LOGIN_VAULT_READ_ONLY');
    expect(error.message).toContain("the 'env' vault is read-only; set vault.provider to 'file' (the default)");
    expect(error.message).toContain('oauthClientCredentials');
  });
});

describe('gateway.trustedProxies', () => {
  const withProxies = (yaml: string) => `gateway:\n  url: https://gateway.example.com\n  trustedProxies: ${yaml}\nsources: {}\n`;
  const problem = (yaml: string) => {
    try {
      parseConfig(withProxies(yaml), 'gateway.yaml');
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('expected the configuration to be refused');
  };

  it('is a list of non-empty strings; anything else is refused with the key and the line', () => {
    expect(parseConfig(withProxies('[10.0.0.0/8, 127.0.0.1]'), 'gateway.yaml').config.gateway.trustedProxies).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
    ]);
    for (const hostile of ['127.0.0.1', '{ __proto__: [127.0.0.1] }', '[8]', "['']", '[[127.0.0.1]]', '[{ a: 1 }]']) {
      expect(problem(hostile), hostile).toMatch(/^gateway\.yaml:3: gateway\.trustedProxies/);
    }
  });
});

describe('receipts.journal', () => {
  const withJournal = (yaml: string) => `gateway:\n  url: https://gateway.example.com\nsources: {}\nreceipts:\n  journal: ${yaml}\n`;

  it('is a boolean, true by default; anything else is refused with the key and the line', () => {
    expect(parseConfig(withJournal('false'), 'gateway.yaml').config.receipts?.journal).toBe(false);
    expect(
      parseConfig('gateway:\n  url: https://gateway.example.com\nsources: {}\n', 'gateway.yaml').config.receipts?.journal,
    ).toBeUndefined();
    for (const hostile of ['"false"', 'yes-please', '0', '[true]', '{ __proto__: true }', 'null']) {
      let message = '';
      try {
        parseConfig(withJournal(hostile), 'gateway.yaml');
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, hostile).toMatch(/^gateway\.yaml:5: receipts\.journal/);
    }
  });
});
