/**
 * One connection to one endpoint: a WebSocket provider that never reconnects by itself (the client decides where to
 * go next) and an ApiPromise over it. @polkadot/api writes its own warnings and RPC errors straight to the console;
 * the provider without auto-reconnect stays quiet about drops, `noInitWarn` and metadata handed in up front silence
 * the start, and every RPC definition is passed with `noErrorLog` so failed calls only reject (the client logs).
 */
import { ApiPromise, WsProvider } from '@polkadot/api';
import { rpcDefinitions } from '@polkadot/types';
import type { DefinitionRpc, DefinitionRpcSub } from '@polkadot/types/types';
import type { HexString } from '@polkadot/util/types';

type RpcDefs = Record<string, Record<string, DefinitionRpc | DefinitionRpcSub>>;

const quietRpc: RpcDefs = Object.fromEntries(
  Object.entries(rpcDefinitions as RpcDefs).map(([section, methods]) => [
    section,
    Object.fromEntries(Object.entries(methods).map(([name, def]) => [name, { ...def, noErrorLog: true }])),
  ]),
);

export interface Session {
  readonly url: string;
  readonly api: ApiPromise;
  /** Resolves once the connection is gone (dropped, or ended by {@link Session.end}). */
  readonly ended: Promise<void>;
  /** Ends the connection now (idempotent). */
  end(): void;
}

/** Metadata by `<genesis hash>-<spec version>`, the key ApiPromise looks up (kept across reconnects). */
export type MetadataCache = Record<string, HexString>;

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Opens `url` within `timeoutMs`; rejects when it does not answer or the connection drops meanwhile. */
export async function openSession(url: string, timeoutMs: number, requestTimeoutMs: number, metadata: MetadataCache): Promise<Session> {
  const provider = new WsProvider(url, false, undefined, requestTimeoutMs);
  let endedResolve!: () => void;
  const ended = new Promise<void>((r) => (endedResolve = r));
  let api: ApiPromise | undefined;
  let over = false;
  const end = (): void => {
    if (over) return;
    over = true;
    endedResolve();
    const closing = api !== undefined ? api.disconnect() : provider.disconnect();
    closing.catch(() => undefined);
  };
  provider.on('disconnected', end);
  provider.on('error', () => {
    if (!provider.isConnected) end();
  });
  try {
    await withTimeout(
      (async () => {
        await provider.connect();
        await Promise.race([provider.isReady, ended.then(() => Promise.reject(new Error(`${url} refused the connection`)))]);
        const [genesis, version] = await Promise.all([
          provider.send<string>('chain_getBlockHash', [0]),
          provider.send<{ specVersion: number }>('state_getRuntimeVersion', []),
        ]);
        const key = `${genesis}-${version.specVersion}`;
        metadata[key] ??= await provider.send<HexString>('state_getMetadata', []);
        api = new ApiPromise({ provider, noInitWarn: true, metadata, rpc: quietRpc });
        await Promise.race([api.isReadyOrError, ended.then(() => Promise.reject(new Error(`${url} dropped the connection`)))]);
      })(),
      timeoutMs,
      url,
    );
  } catch (err) {
    end();
    throw err;
  }
  return { url, api: api!, ended, end };
}
