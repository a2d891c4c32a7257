/**
 * One-call approvals (docs/approvals.md): the gate that asks a person to approve each call of an `each-call` tool,
 * and the approval page (with the authorization area's sign-in and browser sessions) that answers it.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { LoadedConfig } from '@gateway/core';
import { createApprovalsGate } from '../approvals/gate.js';
import { APPROVAL_EXPIRY_SWEEP_MS, receiptedApprovals, startExpirySweep } from '../approvals/receipting.js';
import { approvalRoutes } from '../approvals/routes.js';
import type { Approvals } from '../approvals/ports.js';
import type { ReceiptLog } from '../receipts/log.js';
import type { AuthorizationComponents } from '../authorization/types.js';
import type { PersonActionGate } from '../calls/pipeline.js';
import type { SessionRecord } from '../authorization/stores/ports.js';
import type { Closers } from './closers.js';
import type { GatewayStorage } from './storage.js';

export interface ApprovalsArea {
  gate: PersonActionGate;
  /** The store the gate and the approval page use (the console lists it). */
  approvals: Approvals;
  /** The authorization area's plugin with the approval page beside it (they share the browser sessions). */
  withPages(authPlugin: FastifyPluginAsync): FastifyPluginAsync;
}

export function startApprovals(context: {
  loaded: LoadedConfig;
  storage: GatewayStorage;
  findSession(id: string): Promise<SessionRecord | undefined>;
  authorization: Pick<AuthorizationComponents, 'browser'>;
  /** With receipts on, each decision and expiry is receipted (and evented) in the receipt log. */
  receipts?: ReceiptLog;
  closers?: Closers;
  warn?: (message: string) => void;
}): ApprovalsArea {
  const stored = context.storage.approvals();
  const approvals = context.receipts ? receiptedApprovals(stored, context.receipts) : stored;
  // Expiries nobody comes back for are receipted too; stopped before the receipt log closes (closers run last first).
  if (context.receipts && context.closers) {
    context.closers.add(startExpirySweep(approvals, APPROVAL_EXPIRY_SWEEP_MS, context.warn ?? (() => undefined)));
  }
  const config = context.loaded.config;
  const gate = createApprovalsGate({
    approvals,
    gatewayUrl: config.gateway.url,
    ...(config.approvals?.expirySeconds ? { expirySeconds: config.approvals.expirySeconds } : {}),
    describeSession: context.findSession,
  });
  const { browser } = context.authorization;
  return {
    gate,
    approvals,
    withPages: (authPlugin) => async (instance) => {
      await instance.register(authPlugin);
      await instance.register(approvalRoutes({ approvals, browserSessions: browser.sessions, basePath: browser.basePath }));
    },
  };
}
