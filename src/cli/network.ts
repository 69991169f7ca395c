/**
 * `ddn network …`: a ddn network on a Substrate chain (docs/chain.md). `init` writes the network file every
 * Directory of the network starts with (`ddn serve --ledger substrate --network FILE`); `key` writes a chain
 * account key file (`--chain-key`) and prints its address, for funding.
 */
import { parseHex, toHex } from '../base/bytes.js';
import { createChainKeyFile } from '../chain/chain-key.js';
import { writeNetworkFile, type NetworkDefinition } from '../chain/network-definition.js';
import { createSubstrateClient } from '../chain/substrate-client.js';
import { NETWORK_ID_PATTERN } from '../ledger/anchor-batch.js';
import { loadAttestorKey } from '../app/node-keys.js';
import { group, leaf, UsageError } from './command.js';

const P = 'ddn network';

const init = leaf(`${P} init`, {
  summary: 'write the network file for Directories of several operators on one chain',
  synopsis: '--chain-url URL --chain-key FILE --network-id ID --out FILE [--profile NAME] [--data-dir DIR] [--attestor HEX …]',
  description:
    "Connects to the chain, takes its newest finalized block as the network's start (the ddn genesis time is that\n" +
    "block's timestamp) and writes the network file: the network id (it tags the network's remarks, so several\n" +
    'networks can share a chain), the profile, the persona attestors and the chain (genesis hash, start block).\n' +
    'Every operator of the network starts their Directory with the same file. The persona attestors are the\n' +
    "public keys given with --attestor and, with --data-dir, that directory's attestor.key (created if missing).",
  options: {
    'chain-url': { type: 'string', multiple: true, arg: 'URL', help: 'ws(s):// endpoint of the chain', required: true },
    'chain-key': { type: 'string', arg: 'FILE', help: 'a chain account key file (ddn network key)', required: true },
    'network-id': { type: 'string', arg: 'ID', help: 'the network id: 1-64 of A-Z a-z 0-9 . _ -', required: true },
    out: { type: 'string', arg: 'FILE', help: 'where to write the network file (must not exist)', required: true },
    profile: { type: 'string', arg: 'NAME', help: 'network profile: platform | openpayload', default: 'platform' },
    'data-dir': { type: 'string', arg: 'DIR', help: "a Directory's data directory whose attestor key attests personas" },
    attestor: { type: 'string', multiple: true, arg: 'HEX', help: 'another persona attestor public key (hex Ed25519)' },
  },
  async run(ctx, o) {
    if (!NETWORK_ID_PATTERN.test(o['network-id'])) throw new UsageError(`--network-id: must be 1-64 characters of A-Z a-z 0-9 . _ -, got '${o['network-id']}'`);
    if (o.profile !== 'platform' && o.profile !== 'openpayload') throw new UsageError(`--profile: must be platform or openpayload, got '${o.profile}'`);
    const attestors = (o.attestor ?? []).map((h) => {
      const k = parseHex(h.replace(/^0x/, ''));
      if (k === undefined || k.length !== 32) throw new UsageError(`--attestor: not a hex Ed25519 public key: '${h}'`);
      return k;
    });
    if (o['data-dir'] !== undefined) attestors.push(loadAttestorKey(o['data-dir']).publicKey);
    if (attestors.length === 0) throw new UsageError('name at least one persona attestor: --data-dir DIR or --attestor HEX');
    const client = createSubstrateClient({ urls: o['chain-url'], keyFile: o['chain-key'], logger: silentLogger });
    try {
      ctx.info(`connecting to ${o['chain-url'].join(', ')}`);
      await client.connect(60_000);
      const start = await client.block(await client.finalizedNumber());
      const network: NetworkDefinition = {
        networkId: o['network-id'],
        profile: o.profile,
        personaAttestors: attestors,
        chain: { genesisHash: client.info().genesisHash, start: { number: start.number, hash: start.hash, timestampMs: start.timestampMs } },
      };
      writeNetworkFile(o.out, network);
      return {
        network_file: o.out,
        network_id: network.networkId,
        profile: network.profile,
        chain: { genesis_hash: network.chain.genesisHash, start_block: start.number, spec_name: client.info().specName },
        persona_attestors: attestors.map((k) => toHex(k)),
      };
    } finally {
      await client.close();
    }
  },
});

const key = leaf(`${P} key`, {
  summary: 'write a new chain account key file and print its address',
  synopsis: '--out FILE',
  description:
    'Writes a fresh sr25519 account key (mode 0600; refuses to overwrite) for `ddn serve --chain-key`. Fund the\n' +
    'printed address on the chain before the Directory submits: each batch of changes costs a transaction fee.',
  options: { out: { type: 'string', arg: 'FILE', help: 'where to write the key file', required: true } },
  async run(_ctx, o) {
    const k = await createChainKeyFile(o.out);
    return { key_file: o.out, address: k.address };
  },
});

/** Nothing of the chain client's own logging reaches a command's output. */
const silentLogger = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} };

/** The `network` command group. */
export const networkCommand = group(P, 'a ddn network on a Substrate chain (docs/chain.md)', { init, key });
