import type { Command } from 'commander';
import { registerInit } from './init.js';
import { registerImport } from './import.js';
import { registerReview } from './review.js';
import { registerKeys } from './keys.js';
import { registerPublish } from './publish.js';
import { registerVerify } from './verify.js';
import { registerDiff } from './diff.js';
import { registerServe } from './serve.js';
import { registerSecrets } from './secrets.js';
import { registerStatus } from './status.js';
import { registerPeople } from './people.js';
import { registerSessions } from './sessions.js';
import { registerLogins } from './logins.js';
import { registerReceipts } from './receipts.js';
import { registerWebhooks } from './webhooks.js';
import { registerDoctor } from './doctor.js';
import { registerDrift } from './drift.js';

/** One file per command; each exports `register<Name>(program)`. */
export function registerCommands(program: Command): void {
  registerInit(program);
  registerImport(program);
  registerReview(program);
  registerKeys(program);
  registerPublish(program);
  registerVerify(program);
  registerDiff(program);
  registerServe(program);
  registerSecrets(program);
  registerStatus(program);
  registerPeople(program);
  registerSessions(program);
  registerLogins(program);
  registerReceipts(program);
  registerWebhooks(program);
  registerDoctor(program);
  registerDrift(program);
}
