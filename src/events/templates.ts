/**
 * Payload templates of Send and Call steps (http-api.md §10.9, ledger-rules.md §7.6): every `{"$from": pointer}`
 * object is replaced by the value the RFC 6901 pointer names in the runtime context (`/event/…`, `/envelope/…`,
 * `/policy/…`, `/node/…`); a pointer that names nothing renders as null. Everything else is copied.
 */

/** The runtime context pointers are evaluated against. */
export interface TemplateContext {
  event: Record<string, unknown>;
  envelope: Record<string, unknown>;
  policy: Record<string, unknown>;
  node: Record<string, unknown>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 6901 evaluation; undefined when the pointer names nothing. */
export function evaluatePointer(root: unknown, pointer: string): unknown {
  if (pointer === '') return root;
  if (!pointer.startsWith('/')) return undefined;
  let cur: unknown = root;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      cur = cur[Number(token)];
    } else if (isRecord(cur) && Object.prototype.hasOwnProperty.call(cur, token)) {
      cur = cur[token];
    } else {
      return undefined;
    }
  }
  return cur;
}

/** The rendered value of `template` (a parsed JSON value). */
export function renderTemplate(template: unknown, context: TemplateContext): unknown {
  if (Array.isArray(template)) return template.map((v) => renderTemplate(v, context));
  if (!isRecord(template)) return template;
  const keys = Object.keys(template);
  if (keys.length === 1 && keys[0] === '$from' && typeof template.$from === 'string') {
    const v = evaluatePointer(context, template.$from);
    return v === undefined ? null : v;
  }
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = renderTemplate(template[k], context);
  return out;
}
