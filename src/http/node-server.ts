/**
 * Node's HTTP server under fastify, and the refusals made before any route is known: a refused connection,
 * unparseable HTTP, headers too large (431) or that did not arrive in time, an `Expect` other than 100-continue
 * (417), an `Expect: 100-continue` body that is too large or over the body budget, `CONNECT`. Each gets the role's
 * JSON refusal body, never fastify's or Node's own.
 */
import { memberOf } from '../base/guards.js';
import { maxHeaderSize, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { DdnError } from '../base/errors.js';
import { BodyError, refusedBeforeBody, type BodyLimits } from './body-reader.js';
import { connectionRefused, createBoundedServer, type ConnectionGate, type ConnectionSettings } from './connections.js';
import type { LingeringCloses } from './lingering-close.js';
import { refuse, setResponse } from './request-state.js';

export interface NodeServerDeps {
  settings: ConnectionSettings;
  gate: ConnectionGate | undefined;
  limits: BodyLimits;
  /** Whether bodies are reserved against a budget (the response is then kept on the request). */
  budgeted: boolean;
  /** A whole closing response with the refusal body of `err`, for a raw socket. */
  refusal: (err: DdnError) => string;
  continueRefusal: (req: IncomingMessage) => BodyError | undefined;
  /** Sockets closing in stages after their answer: a request behind that answer is not served. */
  lingering: LingeringCloses;
}

/** fastify's `serverFactory`: the bounded Node server, with the refusals Node would answer without a JSON body. */
export function nodeServerFactory(d: NodeServerDeps) {
  return (fastifyHandler: (req: IncomingMessage, res: ServerResponse) => void): Server => {
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      if (d.lingering.has(req.socket)) {
        req.socket.destroy();
        return;
      }
      if (d.budgeted) setResponse(req, res);
      fastifyHandler(req, res);
    };
    const nodeServer = createBoundedServer(handler, d.settings, d.gate, d.refusal(connectionRefused()));
    // An `Expect` other than 100-continue: 417 with the JSON body (Node's own has none); the body, if any
    // follows, is read and dropped by Node as for any answered request.
    nodeServer.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
      refuse(req, new BodyError(new DdnError('expectation_failed', 'only "Expect: 100-continue" is supported'), false));
      handler(req, res);
    });
    // `Expect: 100-continue`: a body announced over the limit, or beyond the body budget, is refused before
    // the client sends it
    nodeServer.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      setResponse(req, res);
      const refused = refusedBeforeBody(req, d.limits) ?? d.continueRefusal(req);
      if (refused === undefined) res.writeContinue();
      else refuse(req, refused);
      fastifyHandler(req, res);
    });
    // CONNECT is never a route (Node would drop the connection without an answer).
    nodeServer.on('connect', (_req: IncomingMessage, socket: Socket) => {
      const err = new DdnError('method_not_allowed', 'CONNECT is not supported');
      socket.on('error', () => socket.destroy());
      socket.end(d.refusal(err), () => socket.destroy());
    });
    return nodeServer;
  };
}

/**
 * fastify's `clientErrorHandler`: unparseable HTTP, headers beyond Node's size limit (431), or headers that did not
 * arrive in time. The answer is followed by a close in stages: the client may still be sending what the parser
 * stopped reading, and a reset could drop the answer before it is read.
 */
export function clientErrorHandler(d: Pick<NodeServerDeps, 'settings' | 'refusal' | 'lingering'>) {
  return (err: Error, socket: Socket): void => {
    // Unparseable HTTP or a request whose headers did not arrive in time (before any request exists) still
    // gets a JSON error body, never fastify's own shape; a connection that sent nothing is just closed.
    const code = memberOf(err, 'code');
    // the parser may report the rest of an answered request too: it was answered once
    if (code === 'ECONNRESET' || socket.destroyed || d.lingering.has(socket)) return;
    if (!socket.writable || (code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.bytesRead === 0)) {
      socket.destroy(err);
      return;
    }
    socket.on('error', () => socket.destroy());
    d.lingering.answerAndClose(socket, d.refusal(clientError(code, d.settings)));
  };
}

/** The refusal of a request Node's parser gave up on, by the parser's error code. */
function clientError(code: unknown, settings: ConnectionSettings): DdnError {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new DdnError('request_timeout', 'request headers did not arrive in time', { timeout_ms: settings.headersTimeoutMs });
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new DdnError('headers_too_large', `the request line and headers exceed ${maxHeaderSize} bytes`, { limit: maxHeaderSize });
  }
  return new DdnError('invalid_request', 'malformed HTTP request');
}
