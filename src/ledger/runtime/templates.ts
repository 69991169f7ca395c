/** Payload templates of Send and Call steps (ledger-rules.md §7.6). */
import { fromUtf8, utf8Length } from '../../base/bytes.js';
import { JsonSyntaxError, parseStrictJson, type JsonNode } from '../../codec/strict-json.js';

export const TEMPLATE_LIMITS = {
  maxBytes: 4096,
  maxDepth: 16,
  maxNodes: 256,
  maxKeyBytes: 128,
  maxStringBytes: 2048,
  maxPointerBytes: 256,
} as const;

const POINTER_PREFIXES = ['/envelope/', '/event/', '/policy/', '/node/'] as const;

/**
 * True iff `template` is a valid payload template: at most 4096 bytes of UTF-8 strict JSON whose top-level
 * value is an object; the walk (root at depth 0) stays within depth 16 and 256 nodes; a `$from` object has that
 * single key with a string pointer of ≤ 256 bytes under `/envelope/`, `/event/`, `/policy/` or `/node/` and counts
 * as one node; other keys ≤ 128 bytes; strings ≤ 2048 bytes.
 */
export function isValidPayloadTemplate(template: Uint8Array): boolean {
  if (template.length > TEMPLATE_LIMITS.maxBytes) return false;
  let root: JsonNode;
  try {
    // One level of slack: a node at depth 17 is reported by the walk, anything deeper by the parser.
    root = parseStrictJson(fromUtf8(template), TEMPLATE_LIMITS.maxDepth + 1);
  } catch (e) {
    if (e instanceof JsonSyntaxError || e instanceof TypeError) return false;
    throw e;
  }
  if (root.type !== 'object') return false;
  let nodes = 0;
  const walk = (n: JsonNode, depth: number): boolean => {
    if (depth > TEMPLATE_LIMITS.maxDepth) return false;
    if (++nodes > TEMPLATE_LIMITS.maxNodes) return false;
    switch (n.type) {
      case 'object': {
        if (n.members.some(([k]) => k === '$from')) return isFromReference(n.members);
        return n.members.every(([k, v]) => utf8Length(k) <= TEMPLATE_LIMITS.maxKeyBytes && walk(v, depth + 1));
      }
      case 'array':
        return n.items.every((v) => walk(v, depth + 1));
      case 'string':
        return utf8Length(n.value) <= TEMPLATE_LIMITS.maxStringBytes;
      default:
        return true;
    }
  };
  return walk(root, 0);
}

function isFromReference(members: Array<[string, JsonNode]>): boolean {
  if (members.length !== 1) return false;
  const v = members[0]![1];
  if (v.type !== 'string' || utf8Length(v.value) > TEMPLATE_LIMITS.maxPointerBytes) return false;
  return POINTER_PREFIXES.some((p) => v.value.startsWith(p));
}
