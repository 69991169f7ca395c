/**
 * What a refused submission means, from the node's answer: `author_submitAndWatchExtrinsic` rejects an invalid
 * transaction with JSON-RPC error 1010, worded by the node ("1010: Invalid Transaction: Inability to pay some fees
 * , e.g. account balance too low") or as JSON by chopsticks ("1010: {"invalid":{"payment":null}}").
 */
import { ChainError } from './chain-port.js';

export function submitErrorOf(message: string): ChainError {
  const m = message.toLowerCase();
  if (/inability to pay some fees|"payment"|invalid payment/.test(m))
    return new ChainError('insufficient_funds', `the chain account cannot pay the fee: ${message}`);
  if (/exhaust(s)? the (block )?(resources|limits)|exhaustsresources|too large|block length/.test(m))
    return new ChainError('too_large', `the remark exceeds the chain's block limits: ${message}`);
  return new ChainError('rejected', `the chain refused the remark: ${message}`);
}
