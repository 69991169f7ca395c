/**
 * The id of the HTTP request being served, carried across its awaits (AsyncLocalStorage): the logger binds it into
 * every line written while the request runs (`reqId`), and outbound node-to-node calls pass it on as `X-Request-Id`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const scope = new AsyncLocalStorage<string>();

/** Runs `fn` as part of request `id`. */
export function inRequest<T>(id: string, fn: () => T): T {
  return scope.run(id, fn);
}

/** The id of the request the caller runs for, if any. */
export function currentRequestId(): string | undefined {
  return scope.getStore();
}

/** An incoming `X-Request-Id` we accept as is: 1–128 visible ASCII characters without spaces or quotes. */
const ACCEPTED = /^[A-Za-z0-9._:/+=@-]{1,128}$/;

/** `value` when it is an acceptable request id, else undefined (a new one is generated). */
export function acceptedRequestId(value: string | undefined): string | undefined {
  return value !== undefined && ACCEPTED.test(value) ? value : undefined;
}
