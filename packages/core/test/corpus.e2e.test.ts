/**
 * The importer over every document of the shared corpus (../shared/corpus, see its README): real descriptions
 * written by others, from the OpenAPI Initiative's fixtures to GitHub Enterprise (11 MB, 966 operations).
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { corpusDirectory } from '../../../test-support/cli.js';
import {
  GatewayError,
  UNSUPPORTED_REASON_CODES,
  canonicalJson,
  createAjv,
  withDoubles,
  fingerprintOf,
  importOpenApi,
  type ImportedDocument,
} from '../src/index.js';

const documents = [
  ...readdirSync(corpusDirectory)
    .filter((name) => /\.(json|ya?ml)$/.test(name) && name !== 'swagger20-petstore.json')
    .sort(),
  'oas30-digitalocean-multifile/DigitalOcean-public.v2.yaml',
];

const imports = new Map<string, Promise<ImportedDocument>>();
/** Each document is imported once for the checks (and a second time for the determinism check). */
function imported(name: string): Promise<ImportedDocument> {
  let result = imports.get(name);
  if (!result) {
    result = importOpenApi(name, { baseDirectory: corpusDirectory });
    imports.set(name, result);
  }
  return result;
}

const ajv = createAjv();
const reasonCodes = new Set<string>(UNSUPPORTED_REASON_CODES);

describe('importing the corpus', () => {
  it.each(documents)('%s imports: every operation supported or with a documented reason, names valid, schemas compile', async (name) => {
    const document = await imported(name);
    const tools = new Set<string>();
    for (const operation of document.operations) {
      expect(operation.tool).toMatch(/^[a-z0-9_]{1,64}$/);
      expect(tools.has(operation.tool), `duplicate tool ${operation.tool}`).toBe(false);
      tools.add(operation.tool);
      if (operation.status === 'supported') {
        expect(operation.reason).toBeNull();
        expect(operation.server).toMatch(/^https?:\/\//);
      } else {
        expect(reasonCodes.has(operation.reason?.code ?? ''), `${operation.tool}: ${operation.reason?.code}`).toBe(true);
        expect(operation.reason?.message.length).toBeGreaterThan(10);
      }
      expect(operation.description.length).toBeGreaterThan(0);
      expect(operation.fingerprint).toBe(fingerprintOf(operation));
      expect(() => ajv.compile(withDoubles(operation.inputSchema) as object), `${operation.tool} inputSchema`).not.toThrow();
    }
    const order = document.operations.map((operation) => `${operation.path} ${operation.method}`);
    expect(order).toEqual([...order].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });

  it.each(documents)('%s imports byte-identically a second time', async (name) => {
    const first = await imported(name);
    const second = await importOpenApi(name, { baseDirectory: corpusDirectory });
    expect(second.documentDigest).toBe(first.documentDigest);
    expect(canonicalJson(second.operations)).toBe(canonicalJson(first.operations));
  });

  it('refuses the Swagger 2.0 document with OPENAPI_UNSUPPORTED_VERSION', async () => {
    const error = await importOpenApi('swagger20-petstore.json', { baseDirectory: corpusDirectory }).catch((caught) => caught);
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe('OPENAPI_UNSUPPORTED_VERSION');
  });

  it('finds the operation counts of the corpus README', async () => {
    const counts: Record<string, number> = {
      'oas30-petstore.yaml': 3,
      'oas30-petstore-expanded.yaml': 4,
      'oas30-swagger-petstore.json': 20,
      'oas30-slack.json': 174,
      'oas30-spotify.json': 88,
      'oas30-digitalocean.json': 290,
      'oas30-github-enterprise-3.17.json': 966,
      'oas30-digitalocean-multifile/DigitalOcean-public.v2.yaml': 659,
      'oas31-readme-webhooks.json': 0,
      'oas32-minimal_paths.yaml': 0,
      'oas32-tags-example.yaml': 4,
    };
    for (const [name, count] of Object.entries(counts)) {
      expect((await imported(name)).operations, name).toHaveLength(count);
    }
  });

  it('imports the 3.2 documents: QUERY and additionalOperations included', async () => {
    const query = await imported('oas32-query-example.yaml');
    expect(query.openapiVersion).toBe('3.2.0');
    expect(query.operations.map((operation) => [operation.method, operation.path])).toEqual([['QUERY', '/flights/search']]);
    expect(query.operations[0]?.body?.mediaType).toBe('application/json');

    // GET and QUERY as fixed fields, COPY under additionalOperations.
    const pathItem = await imported('oas32-path-item-object-example.yaml');
    expect(pathItem.operations.map((operation) => `${operation.method} ${operation.tool}`)).toEqual([
      'COPY copy_pets_by_id',
      'GET get_pets_by_id',
      'QUERY query_pets_by_id',
    ]);
  });

  it('keeps circular schemas finite and usable', async () => {
    const document = await imported('oas30-readme-circular.json');
    for (const operation of document.operations) {
      const text = JSON.stringify(operation.inputSchema);
      expect(text.length).toBeLessThan(100_000);
      expect(() => ajv.compile(withDoubles(operation.inputSchema) as object)).not.toThrow();
    }
  });

  it('supports nearly all of GitHub Enterprise and says why for the rest', async () => {
    const document = await imported('oas30-github-enterprise-3.17.json');
    const unsupported = document.operations.filter((operation) => operation.status === 'unsupported');
    expect(unsupported.length).toBeLessThan(20);
    for (const operation of unsupported) expect(operation.reason?.code).toBe('MEDIA_TYPE_UNSUPPORTED');
  });
});
