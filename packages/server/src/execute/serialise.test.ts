import { describe, expect, it } from 'vitest';
import type { OperationParameter } from '@gateway/core';
import {
  encodeBody,
  sendsNothing,
  serialiseCookieValue,
  serialiseHeaderValue,
  serialisePathValue,
  serialiseQueryString,
  serialiseQueryValue,
} from './serialise.js';

function parameter(partial: Partial<OperationParameter> & Pick<OperationParameter, 'in' | 'style'>): OperationParameter {
  return { name: 'id', argument: 'id', required: false, explode: false, allowReserved: false, ...partial };
}

const array = [3, 4, 5];
const object = { role: 'admin', firstName: 'Alex' };

// Rows follow the OpenAPI 3.1/3.2 "Style Examples" table.
describe('path parameters follow the OAS style table', () => {
  it.each([
    ['simple', false, 5, '5'],
    ['simple', false, array, '3,4,5'],
    ['simple', false, object, 'role,admin,firstName,Alex'],
    ['simple', true, object, 'role=admin,firstName=Alex'],
    ['label', false, 5, '.5'],
    ['label', false, array, '.3,4,5'],
    ['label', true, array, '.3.4.5'],
    ['label', false, object, '.role,admin,firstName,Alex'],
    ['label', true, object, '.role=admin.firstName=Alex'],
    ['matrix', false, 5, ';id=5'],
    ['matrix', false, array, ';id=3,4,5'],
    ['matrix', true, array, ';id=3;id=4;id=5'],
    ['matrix', false, object, ';id=role,admin,firstName,Alex'],
    ['matrix', true, object, ';role=admin;firstName=Alex'],
  ] as const)('%s explode=%s %j → %s', (style, explode, value, expected) => {
    expect(serialisePathValue(parameter({ in: 'path', style, explode }), value)).toBe(expected);
  });

  it('percent-encodes reserved characters in path values (a value can never add path segments)', () => {
    expect(serialisePathValue(parameter({ in: 'path', style: 'simple' }), '../admin?x=1#y')).toBe('..%2Fadmin%3Fx%3D1%23y');
  });
});

describe('query parameters follow the OAS style table', () => {
  it.each([
    ['form', true, 5, ['id=5']],
    ['form', false, array, ['id=3,4,5']],
    ['form', true, array, ['id=3', 'id=4', 'id=5']],
    ['form', false, object, ['id=role,admin,firstName,Alex']],
    ['form', true, object, ['role=admin', 'firstName=Alex']],
    ['spaceDelimited', false, array, ['id=3%204%205']],
    ['pipeDelimited', false, array, ['id=3%7C4%7C5']],
    ['deepObject', true, object, ['id[role]=admin', 'id[firstName]=Alex']],
  ] as const)('%s explode=%s %j → %j', (style, explode, value, expected) => {
    expect(serialiseQueryValue(parameter({ in: 'query', style, explode }), value)).toEqual(expected);
  });

  it('encodes reserved characters unless allowReserved', () => {
    expect(serialiseQueryValue(parameter({ in: 'query', style: 'form', explode: true }), 'a/b?c&d=e f')).toEqual([
      'id=a%2Fb%3Fc%26d%3De%20f',
    ]);
    expect(serialiseQueryValue(parameter({ in: 'query', style: 'form', explode: true, allowReserved: true }), 'a/b?c:d#e')).toEqual([
      'id=a/b?c:d%23e',
    ]);
  });

  it('a parameter described with content is serialised as that media type', () => {
    expect(serialiseQueryValue(parameter({ in: 'query', style: 'form', contentType: 'application/json' }), { a: 1 })).toEqual([
      'id=%7B%22a%22%3A1%7D',
    ]);
  });

  it('OAS 3.2 querystring: a form-urlencoded object becomes the whole query', () => {
    expect(
      serialiseQueryString(parameter({ in: 'querystring', style: 'form', contentType: 'application/x-www-form-urlencoded' }), {
        q: 'a b',
        tag: ['x', 'y'],
      }),
    ).toEqual(['q=a%20b', 'tag=x', 'tag=y']);
  });
});

describe('headers and cookies', () => {
  it('headers use simple style without percent-encoding', () => {
    expect(serialiseHeaderValue(parameter({ in: 'header', style: 'simple', name: 'X-Ids' }), array)).toBe('3,4,5');
    expect(serialiseHeaderValue(parameter({ in: 'header', style: 'simple', explode: true }), object)).toBe('role=admin,firstName=Alex');
  });

  it('a header value with CR/LF is refused (no header injection)', () => {
    expect(() => serialiseHeaderValue(parameter({ in: 'header', style: 'simple' }), 'a\r\nX-Evil: 1')).toThrow(/cannot carry/);
  });

  it('cookies use form style', () => {
    expect(serialiseCookieValue(parameter({ in: 'cookie', style: 'form', name: 'session' }), 'a b')).toBe('session=a%20b');
    expect(serialiseCookieValue(parameter({ in: 'cookie', style: 'form', name: 'ids' }), array)).toBe('ids=3,4,5');
  });
});

// One rule for every serialisation that drops an empty array or object (docs/request-fidelity.md).
describe('values a serialisation sends as nothing', () => {
  it.each([
    ['form', true, [], true],
    ['form', true, {}, true],
    ['form', false, [], false], // `id=`: the OAS table's empty value, kept
    ['form', false, {}, false],
    ['spaceDelimited', true, [], true],
    ['spaceDelimited', false, [], false],
    ['pipeDelimited', true, [], true],
    ['pipeDelimited', false, [], false],
    ['deepObject', true, {}, true],
    ['deepObject', true, [], true],
    ['deepObject', true, { a: [], b: {} }, true],
    ['deepObject', true, { a: [1] }, false],
  ] as const)('query %s explode=%s %j: sends nothing = %s', (style, explode, value, expected) => {
    const serialised = serialiseQueryValue(parameter({ in: 'query', style, explode }), value);
    expect(sendsNothing(value, serialised)).toBe(expected);
  });

  it('a header of [] or {} and an exploded cookie of [] send nothing; a scalar "" is a value, sent', () => {
    const header = parameter({ in: 'header', style: 'simple' });
    expect(sendsNothing([], serialiseHeaderValue(header, []))).toBe(true);
    expect(sendsNothing({}, serialiseHeaderValue(header, {}))).toBe(true);
    expect(sendsNothing('', serialiseHeaderValue(header, ''))).toBe(false);
    const cookie = parameter({ in: 'cookie', style: 'form', explode: true });
    expect(sendsNothing([], serialiseCookieValue(cookie, []))).toBe(true);
    expect(sendsNothing([], serialiseCookieValue(parameter({ in: 'cookie', style: 'form' }), []))).toBe(false);
  });

  it('a required key of a form body or form query string that would be dropped is an ARGUMENT_REQUIRED_EMPTY usage error', () => {
    const body = { argument: 'body', mediaType: 'application/x-www-form-urlencoded', required: true };
    expect(() => encodeBody(body, { MessageSamples: [], Name: 'n' }, ['MessageSamples'])).toThrow(
      expect.objectContaining({ code: 'ARGUMENT_REQUIRED_EMPTY', category: 'usage' }),
    );
    expect(encodeBody(body, { MessageSamples: [], Name: 'n' }, []).payload).toBe('Name=n');
    const querystring = parameter({ in: 'querystring', style: 'form', contentType: 'application/x-www-form-urlencoded' });
    expect(() => serialiseQueryString(querystring, { tag: [] }, ['tag'])).toThrow(/argument 'id.tag' is required/);
  });
});
