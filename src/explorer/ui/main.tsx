/** The explorer's entry point: one view per address under `/explorer/` (docs/explorer.md). */
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { BlockPage, BlocksPage, TxPage } from './block-pages.js';
import { DidPage } from './did-page.js';
import { currentRoute, interceptLinks, onNavigate } from './navigation.js';
import { PolicyPage } from './policy-page.js';
import { StatusPage } from './status-page.js';
import { ApplicationPage, HomePage, NotFoundPage, PersonaPage, SearchPage } from './subject-pages.js';

function view(parts: string[], query: URLSearchParams) {
  const [page, a, b] = parts;
  switch (page) {
    case undefined:
      return <HomePage />;
    case 'did':
      return a ? <DidPage did={a} /> : null;
    case 'blocks':
      return <BlocksPage />;
    case 'block':
      return a ? <BlockPage which={a} /> : null;
    case 'tx':
      return a ? <TxPage hash={a} /> : null;
    case 'persona':
      return a ? <PersonaPage persona={a} /> : null;
    case 'application':
      return a ? <ApplicationPage id={a} /> : null;
    case 'policy':
      return a && b ? <PolicyPage scope={a} id={b} /> : null;
    case 'status':
      return <StatusPage />;
    case 'search':
      return <SearchPage q={query.get('q') ?? ''} />;
    default:
      return null;
  }
}

function App() {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => onNavigate(() => setRoute(currentRoute())), []);
  const first = useRef(true);
  useEffect(() => {
    // after an in-page navigation, move focus to the new content, as a page load would
    if (first.current) first.current = false;
    else document.getElementById('main')?.focus({ preventScroll: true });
  }, [route]);
  const key = `${route.parts.join('/')}?${route.query.toString()}`;
  return <div key={key}>{view(route.parts, route.query) ?? <NotFoundPage />}</div>;
}

interceptLinks();
const root = document.getElementById('app');
if (root !== null) {
  root.textContent = '';
  render(<App />, root);
}
