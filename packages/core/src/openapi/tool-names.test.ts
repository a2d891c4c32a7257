import { describe, expect, it } from 'vitest';
import { TOOL_NAME_PATTERN, assignToolNames, baseToolName, fitToolName, snakeCase } from './tool-names.js';

describe('tool names', () => {
  it('snake_cases the operationId, splitting camelCase and acronyms', () => {
    expect(snakeCase('getHTTPStatus')).toBe('get_http_status');
    expect(snakeCase('ListPets')).toBe('list_pets');
    expect(snakeCase('repos/get-content')).toBe('repos_get_content');
    expect(snakeCase('  créer une tâche ')).toBe('creer_une_tache');
    expect(snakeCase('__a--b__')).toBe('a_b');
  });

  it('uses the operationId first, else the method and the path with {param} read as by_param', () => {
    expect(baseToolName({ operationId: 'showPetById', method: 'GET', path: '/pets/{petId}' })).toBe('show_pet_by_id');
    expect(baseToolName({ operationId: null, method: 'GET', path: '/pets/{petId}/toys' })).toBe('get_pets_by_pet_id_toys');
    expect(baseToolName({ operationId: '***', method: 'QUERY', path: '/flights/search' })).toBe('query_flights_search');
    expect(baseToolName({ operationId: null, method: '', path: '/' })).toBe('operation');
  });

  it('cuts names longer than 64 to 55 characters, an underscore and 8 hex digits of their sha256', () => {
    const long = `${'a'.repeat(30)}_${'b'.repeat(40)}`;
    const fitted = fitToolName(long);
    expect(fitted).toHaveLength(64);
    expect(fitted).toMatch(/^a{30}_b{24}_[0-9a-f]{8}$/);
    expect(fitToolName(long)).toBe(fitted);
    expect(fitToolName(`${long}c`)).not.toBe(fitted);
    expect(fitToolName('short_name')).toBe('short_name');
  });

  it('resolves collisions by (path, method) order with _2, _3, skipping names already taken', () => {
    const operations = [
      { operationId: 'list', method: 'GET', path: '/b' },
      { operationId: 'list', method: 'GET', path: '/a' },
      { operationId: 'list_2', method: 'GET', path: '/c' },
      { operationId: 'list', method: 'POST', path: '/a' },
    ];
    expect(assignToolNames(operations)).toEqual(['list_4', 'list', 'list_2', 'list_3']);
    // The same input in another order gives every operation the same name.
    const reversed = [...operations].reverse();
    expect(assignToolNames(reversed)).toEqual(['list_3', 'list_2', 'list', 'list_4']);
  });

  it('keeps suffixed names within 64 characters and unique', () => {
    const name = 'x'.repeat(64);
    const names = assignToolNames([
      { operationId: name, method: 'GET', path: '/a' },
      { operationId: name, method: 'GET', path: '/b' },
    ]);
    expect(names[0]).toBe(name);
    expect(names[1]).toBe(`${'x'.repeat(62)}_2`);
    for (const entry of names) expect(entry).toMatch(TOOL_NAME_PATTERN);
  });
});
