import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { corpusDirectory } from '../../../test-support/cli.js';
import canonicalizeModule from 'canonicalize';
import { canonicalJson } from './canonical.js';
import { holdsBigInt, mayHoldUnsafeIntegers, parseJsonExact, stringifyExact, withDoubles } from './exact-integers.js';
import { parseDocumentText } from './openapi/load.js';
import { SchemaConverter } from './openapi/schema.js';

const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (value: unknown) => string;

describe('integers whose digits a double would change are read exactly', () => {
  it('JSON: unsafe integer literals become BigInts; strings, floats and safe integers are untouched', () => {
    const text =
      '{"a": 18014398509481983, "s": "x\\" 18014398509481983", "f": 1.8014398509481983e16, "n": [-9223372036854775808, 9007199254740991]}';
    expect(parseJsonExact(text)).toEqual({
      a: 18014398509481983n,
      s: 'x" 18014398509481983',
      f: 18014398509481984,
      n: [-9223372036854775808n, 9007199254740991],
    });
  });

  it('a literal that already is the shortest form of its double stays a number (its digits survive anyway)', () => {
    expect(parseJsonExact('{"m": 18446744073709552000}')).toEqual({ m: 18446744073709552000 });
    expect(parseDocumentText('m: 18446744073709552000\n', 'doc.yaml')).toEqual({ m: 18446744073709552000 });
  });

  it('YAML: the same rule, ordinary integers stay numbers', () => {
    expect(parseDocumentText('a: 18014398509481983\nb: 12\nc: "18014398509481983"\n', 'doc.yaml')).toEqual({
      a: 18014398509481983n,
      b: 12,
      c: '18014398509481983',
    });
  });
});

describe('exact integers are written digit for digit', () => {
  it('canonical JSON writes their digits; a value without one gets exactly the RFC 8785 text', () => {
    expect(canonicalJson({ b: 18014398509481983n, a: 'x' })).toBe('{"a":"x","b":18014398509481983}');
    const plain = { b: [1, 2.5, 1e21, 'é'], a: { z: null, y: true } };
    expect(canonicalJson(plain)).toBe(canonicalize(plain));
  });

  it('a string that looks like a placeholder stays a string', () => {
    const value = { a: 18014398509481983n, s: 'exact-integer-x:1' };
    expect(stringifyExact(value)).toBe('{"a":18014398509481983,"s":"exact-integer-x:1"}');
  });

  it('validators get a copy with doubles; a value without BigInts is returned as it is', () => {
    const schema = { maximum: 18014398509481983n, minimum: -9223372036854775808n, items: [{ const: 1 }] };
    expect(withDoubles(schema)).toEqual({ maximum: 2 ** 54, minimum: -(2 ** 63), items: [{ const: 1 }] });
    expect(schema.maximum).toBe(18014398509481983n);
    const plain = { maximum: 5 };
    expect(withDoubles(plain)).toBe(plain);
  });

  it('the 3.0 exclusiveMaximum rewrite moves an exact bound', () => {
    const converter = new SchemaConverter({}, '3.0');
    const converted = converter.convert({ type: 'integer', maximum: 9223372036854775807n, exclusiveMaximum: true }).schema;
    expect(converted).toEqual({ type: 'integer', exclusiveMaximum: 9223372036854775807n });
  });
});

describe('documents without such integers are read exactly as before', () => {
  it.each(['oas30-slack.json', 'oas31-readme-train-travel.json', 'oas30-digitalocean.json'])(
    '%s: has 16-digit runs, so takes the exact parser, and gives the same tree as JSON.parse (no BigInt)',
    async (name) => {
      const text = await readFile(join(corpusDirectory, name), 'utf8');
      expect(mayHoldUnsafeIntegers(text)).toBe(true);
      const exact = parseDocumentText(text, name);
      expect(holdsBigInt(exact)).toBe(false);
      expect(exact).toStrictEqual(JSON.parse(text));
    },
  );
});
