// Records which npm packages a Node process loads, for the tests that prove a package is imported only when it
// is used (packages/server/test/lazy-modules.test.ts). Run a process with `node --import <this file> …` and
// MODULE_RECORD=<file>: every package the ES module loader resolves (static or dynamic `import`) is appended to
// that file, one name a line, the first time it is seen. Appending as it goes (not at exit) keeps the record
// even when the process is killed. A module resolution hook (node:module register) sees what the process
// itself loads, which neither a bundle analysis nor a test importing the sources could tell.
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const record = process.env.MODULE_RECORD;
if (!record) throw new Error('module-recorder: set MODULE_RECORD to the file to append package names to');

/** `execa` for …/node_modules/.pnpm/execa@9.6.0/node_modules/execa/index.js, `@scope/name` for a scoped package. */
function packageOf(url) {
  const at = url.lastIndexOf('/node_modules/');
  if (at < 0) return undefined;
  const [first, second] = url.slice(at + '/node_modules/'.length).split('/');
  return first.startsWith('@') ? `${first}/${second}` : first;
}

const seen = new Set();
const { port1, port2 } = new MessageChannel();
port1.on('message', (url) => {
  const name = packageOf(url);
  if (name === undefined || seen.has(name)) return;
  seen.add(name);
  appendFileSync(record, `${name}\n`);
});
// The recorder must never keep the process it watches alive.
port1.unref();

// The hooks run on the loader's own thread; they post each resolved URL back here.
const hooks = `
let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  port.postMessage(result.url);
  return result;
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, {
  parentURL: import.meta.url,
  data: { port: port2 },
  transferList: [port2],
});
