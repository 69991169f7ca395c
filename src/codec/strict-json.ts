/**
 * A strict RFC 8259 JSON parser producing a syntax tree that keeps object members in their written order,
 * duplicates included (JSON.parse keeps only the last duplicate and reorders integer-like keys). Used where a
 * rule must see the text as written (payload templates, ledger-rules.md §7.6).
 */

export type JsonNode =
  | { type: 'object'; members: Array<[key: string, value: JsonNode]> }
  | { type: 'array'; items: JsonNode[] }
  | { type: 'string'; value: string }
  | { type: 'number'; text: string }
  | { type: 'boolean'; value: boolean }
  | { type: 'null' };

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`${message} at offset ${offset}`);
    this.name = 'JsonSyntaxError';
  }
}

const NUMBER_RE = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/**
 * Parses `text` (one JSON value, optional surrounding whitespace of space/TAB/LF/CR only).
 * `maxDepth` bounds nesting (the root value is depth 0); deeper input is a syntax error.
 */
// eslint-disable-next-line max-lines-per-function -- one scanner: its nested functions share the cursor `i`; split apart they would pass it on every call of a hot path (every envelope and request body)
export function parseStrictJson(text: string, maxDepth = 512): JsonNode {
  let i = 0;
  const err = (m: string): never => {
    throw new JsonSyntaxError(m, i);
  };
  const ws = () => {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const str = (): string => {
    i++; // opening quote
    let out = '';
    for (;;) {
      if (i >= text.length) err('unterminated string');
      const c = text[i]!;
      if (c === '"') {
        i++;
        return out;
      }
      if (c.charCodeAt(0) < 0x20) err('control character in string');
      if (c !== '\\') {
        out += c;
        i++;
        continue;
      }
      const e = text[i + 1];
      if (e === undefined) err('unterminated escape');
      if (e === 'u') {
        const hex = text.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) err('invalid \\u escape');
        out += String.fromCharCode(parseInt(hex, 16));
        i += 6;
      } else {
        const m = ESCAPES[e!];
        if (m === undefined) err('invalid escape');
        out += m;
        i += 2;
      }
    }
  };
  const value = (depth: number): JsonNode => {
    if (depth > maxDepth) err('nesting too deep');
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const members: Array<[string, JsonNode]> = [];
      ws();
      if (text[i] === '}') {
        i++;
        return { type: 'object', members };
      }
      for (;;) {
        ws();
        if (text[i] !== '"') err('expected a member name');
        const k = str();
        ws();
        if (text[i] !== ':') err("expected ':'");
        i++;
        members.push([k, value(depth + 1)]);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return { type: 'object', members };
        }
        err("expected ',' or '}'");
      }
    }
    if (c === '[') {
      i++;
      const items: JsonNode[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return { type: 'array', items };
      }
      for (;;) {
        items.push(value(depth + 1));
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return { type: 'array', items };
        }
        err("expected ',' or ']'");
      }
    }
    if (c === '"') return { type: 'string', value: str() };
    if (text.startsWith('true', i)) {
      i += 4;
      return { type: 'boolean', value: true };
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return { type: 'boolean', value: false };
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return { type: 'null' };
    }
    NUMBER_RE.lastIndex = i;
    const m = NUMBER_RE.exec(text);
    if (!m) return err('unexpected character');
    i += m[0].length;
    return { type: 'number', text: m[0] };
  };
  const root = value(0);
  ws();
  if (i !== text.length) err('trailing characters');
  return root;
}
