/** The ledger contract on the embedded SQLite ledger (one node; blocks produced on demand). */
import { genesisConfig, Harness } from '../ledger/harness.js';
import { ledgerContract, type ContractCluster } from './ledger-contract.js';

ledgerContract('SQLite', async (o = {}) => {
  const h = new Harness(o.profile === undefined ? {} : { profile: o.profile, genesis: genesisConfig({ profile: o.profile.p }) });
  const node = {
    get ledger() {
      return h.ledger;
    },
  };
  const cluster: ContractCluster = {
    nodes: [node],
    async settle() {
      while (h.ledger.produceBlock()) {
        // until the pool is empty
      }
    },
    async sync() {},
    async restart() {
      h.reopen();
    },
    async close() {
      h.close();
    },
  };
  return cluster;
});
