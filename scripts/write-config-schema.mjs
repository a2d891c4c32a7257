#!/usr/bin/env node
// Writes docs/gateway-config.schema.json from the schema gateway.yaml is validated with, so the published
// schema cannot drift from the code (packages/cli/test/init.test.ts fails when it does).
// Run after `pnpm build`: node scripts/write-config-schema.mjs
import { writeFile } from 'node:fs/promises';
import { configSchema } from '../packages/core/dist/index.js';

const target = new URL('../docs/gateway-config.schema.json', import.meta.url);
await writeFile(target, `${JSON.stringify(configSchema, null, 2)}\n`);
console.log(`wrote ${target.pathname}`);
