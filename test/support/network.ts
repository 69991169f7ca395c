/** Starts real nodes (the composition root, real sockets on port 0) in temp data dirs for network tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/app/config.js';
import { startNode, type NodeOverrides, type RunningNode } from '../../src/app/node.js';
import { checkContract, stopChecking } from './contract-check.js';

export interface TestNode extends RunningNode {
  dataDir: string;
  /** Closes the node and removes its data dir unless `keep`. */
  stop(keep?: boolean): Promise<void>;
}

/** `overrides`: test seams of the node (a `ManualClock`, …); its logger is silent unless one is given. */
export async function startTestNode(args: string[] = [], dataDir = mkdtempSync(join(tmpdir(), 'ddn-node-')), overrides: NodeOverrides = {}): Promise<TestNode> {
  const config = loadConfig(['--data-dir', dataDir, '--directory-port', '0', '--relay-port', '0', '--cache-port', '0', '--block-time-ms', '10', ...args], {});
  const node = await startNode(config, { logger: pino({ level: 'silent' }), ...overrides });
  // every answer a test reads from this node is checked against the node's OpenAPI documents
  const urls = Object.values(node.urls).filter((u): u is string => u !== undefined);
  await checkContract(urls);
  return Object.assign(node, {
    dataDir,
    async stop(keep = false) {
      await node.close();
      if (!keep) rmSync(dataDir, { recursive: true, force: true });
      stopChecking(urls);
    },
  });
}
