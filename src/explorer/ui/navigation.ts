/** Client-side navigation inside the explorer: pushState for its own links, a signal for the current path. */
import { EXPLORER_BASE } from './api.js';

type Listener = () => void;
const listeners = new Set<Listener>();

export function onNavigate(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

export function navigate(href: string, replace = false): void {
  if (replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  window.scrollTo(0, 0);
  for (const l of listeners) l();
}

/** The decoded path segments after the explorer's base, and the query. */
export function currentRoute(): { parts: string[]; query: URLSearchParams } {
  let path = location.pathname;
  if (path.startsWith(EXPLORER_BASE)) path = path.slice(EXPLORER_BASE.length);
  const parts = path
    .split('/')
    .filter((p) => p !== '')
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  return { parts, query: new URLSearchParams(location.search) };
}

/** Same-document links under the explorer's base navigate without a reload. */
export function interceptLinks(): void {
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest('a');
    if (!a || a.target || a.hasAttribute('download') || a.origin !== location.origin) return;
    if (!a.pathname.startsWith(EXPLORER_BASE) || a.pathname.startsWith(`${EXPLORER_BASE}/assets/`)) return;
    e.preventDefault();
    navigate(a.pathname + a.search);
  });
  window.addEventListener('popstate', () => {
    for (const l of listeners) l();
  });
}
