// Writes docs/errors.md from the error registry (packages/core/src/error-codes.ts). Run after `pnpm build`:
// `pnpm gen:errors`. packages/core/test/error-codes.test.ts fails when the file is stale.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderErrorDocs } from '../packages/core/dist/index.js';

const target = fileURLToPath(new URL('../docs/errors.md', import.meta.url));
await writeFile(target, renderErrorDocs());
console.log(`wrote ${target}`);
