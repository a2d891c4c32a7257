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

  it('with the postgres vault is accepted: it is writable and shared by replicas', () => {
    const vault = 'vault:\n  provider: postgres\n  postgres:\n    url: { env: VAULT_DB }\n    key: { file: kek.txt }\n';
    const loaded = parseConfig(person(', issuer: https://id.example.com', vault), 'g.yaml');
    expect(loaded.config.vault?.postgres).toEqual({ url: { env: 'VAULT_DB' }, key: { file: 'kek.txt' } });
  });
});

describe('vault.postgres', () => {
  const config = (vault: string) => `gateway:\n  url: http://127.0.0.1:8080\nsources: {}\nvault:\n${vault}`;
  const refusal = (text: string) => {
    try {
      parseConfig(text, 'gateway.yaml');
    } catch (error) {
      return error as Error & { code: string };
    }
    throw new Error('expected the configuration to be refused');
  };

  it('takes the connection string and the key each from env, file or exec, and earlier keys for reading', () => {
    const loaded = parseConfig(
      config(
        '  provider: postgres\n  postgres:\n    url: { exec: [./print-url], timeoutMs: 2000 }\n    key: { env: KEK }\n' +
          '    previousKeys: [{ file: old.key }]\n',
      ),
      'gateway.yaml',
    );
    expect(loaded.config.vault?.postgres?.previousKeys).toEqual([{ file: 'old.key' }]);
  });

  it('refuses the provider without its section, a source naming two places or none, and a timeout without a command', () => {
    expect(refusal(config('  provider: postgres\n')).code).toBe('CONFIG_INVALID');
    expect(refusal(config('  provider: postgres\n  postgres: { url: { env: A } }\n')).code).toBe('CONFIG_INVALID');
    expect(refusal(config('  provider: postgres\n  postgres: { url: { env: A, file: b }, key: { env: K } }\n')).code).toBe(
      'CONFIG_INVALID',
    );
    expect(refusal(config('  provider: postgres\n  postgres: { url: {}, key: { env: K } }\n')).code).toBe('CONFIG_INVALID');
    expect(refusal(config('  provider: postgres\n  postgres: { url: { env: A, timeoutMs: 5 }, key: { env: K } }\n')).code).toBe(
      'CONFIG_INVALID',
    );
  });

  it('refuses hostile shapes: wrong types, unknown keys, __proto__, deep nesting, oversized values', () => {
    const deep = `${'['.repeat(64)}x${']'.repeat(64)}`;
    const hostile = [
      'url: 5, key: { env: K }',
      'url: [postgres://x], key: { env: K }',
      'url: { env: 5 }, key: { env: K }',
      'url: { env: A }, key: { env: K }, extra: true',
      'url: { env: A, __proto__: { file: x } }, key: { env: K }',
      '__proto__: { url: { env: A } }, key: { env: K }',
      'url: { env: A }, key: { exec: "not a list" }',
      `url: { env: A }, key: { exec: ${deep} }`,
      'url: { env: A }, key: { env: K }, previousKeys: { env: K }',
      `url: { env: ${'A'.repeat(100_000)} }, key: { env: K }`,
      'url: { env: "A=B" }, key: { env: K }',
      `url: { file: ${'a'.repeat(5_000)} }, key: { env: K }`,
      `url: { env: A }, key: { env: K }, previousKeys: [${Array.from({ length: 17 }, (_, index) => `{ env: K${index} }`).join(', ')}]`,
    ];
    for (const shape of hostile) {
      expect(refusal(config(`  provider: postgres\n  postgres: { ${shape} }\n`)).code, shape.slice(0, 80)).toBe('CONFIG_INVALID');
    }
  });
});

describe('oauthPerson credentials of an MCP source', () => {
  const mcp = (credentials: string, extra = '', vault = '') =>
    'gateway:\n  url: http://127.0.0.1:8080\nsources:\n  tracker:\n    kind: mcp\n    url: https://mcp.example.com/mcp\n' +
    `    credentials: ${credentials}\n${extra}${vault}`;
  const person = '{ type: oauthPerson, issuer: https://id.example.com, clientId: c, secret: s, scopes: [openid] }';
  const refusal = (text: string) => {
    try {
      parseConfig(text, 'gateway.yaml');
    } catch (error) {
      return error as Error & { code: string };
    }
    throw new Error('expected the configuration to be refused');
  };

  it("is accepted, with the gateway's own listingCredentials beside it", () => {
    const loaded = parseConfig(mcp(person, '    listingCredentials: { type: bearer, secret: listing }\n'), 'gateway.yaml');
    const source = loaded.config.sources.tracker!;
    expect(source.kind === 'mcp' && source.credentials).toMatchObject({ type: 'oauthPerson', clientId: 'c' });
    expect(source.kind === 'mcp' && source.listingCredentials).toEqual({ type: 'bearer', secret: 'listing' });
  });

  it('names what is wrong: the provider, listingCredentials without it, a per-person listing, a stdio server, a read-only vault', () => {
    expect(refusal(mcp('{ type: oauthPerson, clientId: c, secret: s }')).message).toContain(
      "sources.tracker.credentials: an oauthPerson login needs either 'issuer' (discovery) or both 'authorizationUrl' and 'tokenUrl'",
    );
    expect(refusal(mcp('{ type: bearer, secret: t }', '    listingCredentials: { type: bearer, secret: l }\n')).message).toContain(
      'sources.tracker.listingCredentials: only beside credentials of type oauthPerson',
    );
    expect(refusal(mcp(person, `    listingCredentials: ${person}\n`)).message).toContain(
      'sources.tracker.listingCredentials.type: must be one of',
    );
    const stdio =
      'gateway:\n  url: http://127.0.0.1:8080\nsources:\n  tracker:\n    kind: mcp\n    command: [node, s.js]\n' +
      `    credentials: ${person}\n`;
    expect(refusal(stdio).message).toContain("sources.tracker.credentials: only for 'url' sources");
    const readOnly = refusal(mcp(person, '', 'vault:\n  provider: exec\n  exec: { command: [echo] }\n'));
    expect(readOnly.code).toBe('PERSON_LOGIN_VAULT_READ_ONLY');
    expect(readOnly.message).toContain("sources.tracker.credentials: an oauthPerson login keeps each person's tokens in the vault");
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

describe('storage', () => {
  const withStorage = (yaml: string) => `gateway:\n  url: https://gateway.example.com\nsources: {}\nstorage:\n${yaml}`;
  const problem = (yaml: string) => {
    try {
      parseConfig(withStorage(yaml), 'gateway.yaml');
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('expected the configuration to be refused');
  };

  it('is sqlite by default, or postgres with the vault name of its connection string', () => {
    expect(parseConfig('gateway:\n  url: https://gateway.example.com\nsources: {}\n', 'gateway.yaml').config.storage).toBeUndefined();
    expect(parseConfig(withStorage('  kind: sqlite\n'), 'gateway.yaml').config.storage).toEqual({ kind: 'sqlite' });
    expect(parseConfig(withStorage('  kind: postgres\n  url: database-url\n'), 'gateway.yaml').config.storage).toEqual({
      kind: 'postgres',
      url: 'database-url',
    });
    expect(problem('  kind: postgres\n')).toMatch(/storage: missing required key 'url'/);
    expect(problem('  kind: mysql\n')).toMatch(/storage\.kind: must be one of \["sqlite","postgres"\]/);
  });

  it('takes a pool size of 1 to 200 connections per process', () => {
    expect(parseConfig(withStorage('  kind: postgres\n  url: database-url\n  poolSize: 4\n'), 'gateway.yaml').config.storage).toEqual({
      kind: 'postgres',
      url: 'database-url',
      poolSize: 4,
    });
    expect(problem('  kind: postgres\n  url: database-url\n  poolSize: 0\n')).toMatch(/storage\.poolSize: must be >= 1/);
    expect(problem('  kind: postgres\n  url: database-url\n  poolSize: 201\n')).toMatch(/storage\.poolSize: must be <= 200/);
    expect(problem('  kind: postgres\n  url: database-url\n  poolSize: ten\n')).toMatch(/storage\.poolSize: must be integer/);
  });

  it('refuses a connection string written where the vault name goes (it would put the password in gateway.yaml)', () => {
    const message = problem('  kind: postgres\n  url: postgres://gateway:hunter2@db:5432/gateway\n');
    expect(message).toMatch(/^gateway\.yaml:6: storage\.url/);
    expect(message).not.toContain('hunter2');
  });
});
