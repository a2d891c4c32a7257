/**
 * Requests built for the whole corpus (../shared/corpus): for every supported operation of every document,
 * arguments generated from the tool's own inputSchema (openapi-sampler, deterministic) are either built
 * into a request or refused as an argument error (`usage`) — never an internal error, never a refusal saying the
 * operation cannot be served (that would contradict its `supported` status). Then an independent OpenAPI request
 * validator (openapi-backend, not our code) checks a sample of the built requests against the document itself;
 * the acceptance rate per document is printed and kept in docs/request-fidelity.md.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { sample as sampleSchema } from 'openapi-sampler';
import { OpenAPIBackend } from 'openapi-backend';
import { describe, expect, it } from 'vitest';
import { createAjv, importOpenApi, isGatewayError, parseDocumentText, type LockedOperation, type Operation } from '@gateway/core';
import { corpusDirectory } from '../../../test-support/cli.js';
import { NO_CREDENTIALS, buildUpstreamRequest, type UpstreamRequest } from '../src/execute/request.js';

/** Operations tried per document (evenly spread), samples per operation, requests checked independently. */
const OPERATIONS_PER_DOCUMENT = 40;
const SAMPLES_PER_OPERATION = 2;
const VALIDATED_PER_DOCUMENT = 30;

const documents = [
  ...readdirSync(corpusDirectory)
    .filter((name) => /\.(json|ya?ml)$/.test(name) && name !== 'swagger20-petstore.json')
    .sort(),
  'oas30-digitalocean-multifile/DigitalOcean-public.v2.yaml',
];

/**
 * Arguments from the tool's inputSchema with openapi-sampler (deterministic by design, so the test needs no seed):
 * sample 0 fills every property, sample 1 only the required ones. It follows `$ref` into `$defs` and stops on cycles.
 */
function generate(schema: unknown, sample: number): unknown {
  return sampleSchema(schema as never, { skipReadOnly: true, skipNonRequired: sample === 1, quiet: true }, schema as never);
}

/** Evenly spread, deterministic sample of at most `count` items. */
function spread<T>(items: T[], count: number): T[] {
  if (items.length <= count) return items;
  const step = items.length / count;
  return Array.from({ length: count }, (_unused, index) => items[Math.floor(index * step)] as T);
}

interface Built {
  operation: Operation;
  request: UpstreamRequest;
}

interface Counts {
  operations: number;
  generated: number;
  generatorInvalid: number;
  accepted: number;
  argumentErrors: number;
  contradictions: string[];
  built: Built[];
  milliseconds?: number;
}

const results = new Map<string, Counts>();

async function exercise(name: string): Promise<Counts> {
  const started = performance.now();
  // One validator per document: ajv keeps every schema it compiled.
  const ajv = createAjv();
  const imported = await importOpenApi(name, { baseDirectory: corpusDirectory });
  const supported = imported.operations.filter((operation) => operation.status === 'supported');
  const counts: Counts = {
    operations: supported.length,
    generated: 0,
    generatorInvalid: 0,
    accepted: 0,
    argumentErrors: 0,
    contradictions: [],
    built: [],
  };
  for (const operation of spread(supported, OPERATIONS_PER_DOCUMENT)) {
    const validate = ajv.compile(operation.inputSchema as object);
    for (let sample = 0; sample < SAMPLES_PER_OPERATION; sample += 1) {
      let argumentsValue: unknown;
      try {
        argumentsValue = generate(operation.inputSchema, sample);
      } catch {
        counts.generatorInvalid += 1;
        continue;
      }
      // The generator is not a validator: arguments the tool itself refuses never reach the request builder.
      if (!validate(argumentsValue)) {
        counts.generatorInvalid += 1;
        continue;
      }
      counts.generated += 1;
      try {
        const request = buildUpstreamRequest(
          { ...operation, selected: true } as LockedOperation,
          argumentsValue as Record<string, unknown>,
          NO_CREDENTIALS,
        );
        counts.accepted += 1;
        counts.built.push({ operation, request });
      } catch (error) {
        if (isGatewayError(error) && error.category === 'usage') counts.argumentErrors += 1;
        else
          counts.contradictions.push(`${operation.tool}: ${(error as Error).message} with ${JSON.stringify(argumentsValue).slice(0, 200)}`);
      }
    }
  }
  results.set(name, counts);
  counts.milliseconds = Math.round(performance.now() - started);
  return counts;
}

describe('requests built from generated arguments, over the corpus', () => {
  it.each(documents)("%s: arguments valid against a supported tool's inputSchema are built or refused as argument errors", async (name) => {
    const counts = await exercise(name);
    console.log(
      `${name}: ${counts.operations} supported, ${counts.generated} valid argument sets → ${counts.accepted} built, ` +
        `${counts.argumentErrors} argument errors, ${counts.contradictions.length} contradictions ` +
        `(${counts.generatorInvalid} generated sets refused by the schema itself, skipped) in ${counts.milliseconds} ms`,
    );
    expect(counts.contradictions).toEqual([]);
    if (counts.operations > 0) expect(counts.generated).toBeGreaterThan(0);
  });
});

/**
 * The document as the independent validator reads it (multi-file documents are left out: it needs one file).
 * openapi-backend finds operations by operationId, so the ones without get `<METHOD> <path>`.
 */
function definitionOf(name: string): Record<string, unknown> {
  const definition = parseDocumentText(readFileSync(join(corpusDirectory, name), 'utf8'), name) as Record<string, unknown>;
  const paths = (definition.paths ?? {}) as Record<string, Record<string, unknown>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item ?? {})) {
      if (!['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'].includes(method)) continue;
      if (operation && typeof operation === 'object' && typeof (operation as { operationId?: unknown }).operationId !== 'string') {
        (operation as { operationId: string }).operationId = `${method.toUpperCase()} ${path}`;
      }
    }
  }
  return definition;
}

/** The body as a server framework would hand it to the validator: JSON parsed, form pairs as an object. */
function parsedBody(request: UpstreamRequest): unknown {
  if (request.body === undefined) return undefined;
  const type = request.headers['content-type'] ?? '';
  if (type.includes('json')) {
    const parsed: unknown = JSON.parse(request.body);
    // A JSON string body is handed over as its JSON text: openapi-backend parses string bodies itself.
    return typeof parsed === 'string' ? request.body : parsed;
  }
  if (type.startsWith('application/x-www-form-urlencoded')) {
    const object: Record<string, unknown> = {};
    for (const [key, value] of new URLSearchParams(request.body)) {
      const existing = object[key];
      object[key] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
    }
    return object;
  }
  // openapi-backend reads a string body as JSON text.
  return JSON.stringify(request.body);
}

const independentDocuments = documents.filter((name) => !name.includes('/') && !name.startsWith('oas32-') && statSize(name) < 2_000_000);

function statSize(name: string): number {
  return readFileSync(join(corpusDirectory, name)).length;
}

const acceptance: string[] = [];
const totals = { accepted: 0, checked: 0 };

describe('an independent request validator (openapi-backend) accepts the built requests', () => {
  it.each(independentDocuments)('%s', async (name) => {
    const counts = results.get(name) ?? (await exercise(name));
    const sample = spread(counts.built, VALIDATED_PER_DOCUMENT);
    if (sample.length === 0) return;
    // Form values arrive as text: the validator coerces them for form bodies only (as form-handling servers do).
    const strict = new OpenAPIBackend({ definition: definitionOf(name) as never, quick: true, validate: true, strict: false });
    const coercing = new OpenAPIBackend({
      definition: definitionOf(name) as never,
      quick: true,
      validate: true,
      strict: false,
      ajvOpts: { coerceTypes: true },
    });
    try {
      await strict.init();
      await coercing.init();
    } catch (error) {
      acceptance.push(`| ${name} | validator could not load the document: ${(error as Error).message.slice(0, 80)} | | |`);
      return;
    }
    let accepted = 0;
    let uncheckable = 0;
    const refusals: string[] = [];
    for (const { operation, request } of sample) {
      const basePath = new URL(operation.server as string).pathname.replace(/\/+$/, '');
      const path = request.url.pathname.slice(basePath.length) || '/';
      const isForm = (request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
      let result: ReturnType<OpenAPIBackend['validateRequest']>;
      try {
        result = (isForm ? coercing : strict).validateRequest({
          method: request.method,
          path,
          query: request.url.search.replace(/^\?/, ''),
          headers: request.headers,
          body: parsedBody(request),
        });
      } catch (error) {
        // The validator itself failed (e.g. its stack on recursive schemas): no verdict either way.
        uncheckable += 1;
        refusals.push(`${operation.tool}: validator error ${(error as Error).message.slice(0, 120)}`);
        continue;
      }
      if (result.valid) accepted += 1;
      else refusals.push(`${operation.tool}: ${JSON.stringify(result.errors?.[0]).slice(0, 160)}`);
    }
    const checked = sample.length - uncheckable;
    totals.accepted += accepted;
    totals.checked += checked;
    const rate = checked === 0 ? '–' : `${((accepted / checked) * 100).toFixed(0)} %`;
    acceptance.push(`| ${name} | ${accepted}/${checked} | ${rate} | ${uncheckable} |`);
    console.log(
      `${name}: independent validator accepted ${accepted}/${checked} (${uncheckable} not checkable)${
        refusals.length ? `; first refusals:\n  ${refusals.slice(0, 3).join('\n  ')}` : ''
      }`,
    );
    expect(checked + uncheckable).toBe(sample.length);
  });

  it('accepts at least 90 % of the checked requests over all documents, and prints the rate per document', () => {
    console.log(
      ['| document | accepted / checked | rate | not checkable |', '|---|---|---|---|', ...acceptance].join('\n') +
        `\noverall: ${totals.accepted}/${totals.checked}`,
    );
    expect(totals.checked).toBeGreaterThan(200);
    expect(totals.accepted / totals.checked).toBeGreaterThanOrEqual(0.9);
  });
});
