/**
 * One 25 MiB envelope (the whole body limit: 16 MiB of ciphertext, the unchunked maximum, plus an opaque payload
 * member) stored and retrieved (`GET /cache/message/{did}/{id}`), on a service that has served nothing else
 * yet. The figure is the growth of the service's peak RSS (VmHWM, reset through /proc/<pid>/clear_refs just
 * before) over its RSS before the store.
 */
import { enc, type BenchContext, type Figure } from '../context.js';
import { envelopeTemplate, freshEnvelope, proofHeaders } from '../envelopes.js';
import { peakRssBytes, resetPeakRss, rssBytes } from '../proc.js';

const MiB = 2 ** 20;

export async function largeEnvelopeFigure(ctx: BenchContext): Promise<Figure> {
  const { service } = ctx;
  const size = ctx.settings.largeEnvelopeBytes;
  const r = ctx.recipients.large;
  const { body, messageId } = freshEnvelope(envelopeTemplate(r.did, size));
  const pid = service.pid;
  await new Promise((res) => setTimeout(res, 500));
  const before = rssBytes(pid);
  const peakReset = resetPeakRss(pid);
  // a coarse poll as well, in case clear_refs is not permitted
  let polled = before;
  const poll = setInterval(() => {
    polled = Math.max(polled, rssBytes(pid));
  }, 5);
  try {
    const t0 = performance.now();
    const st = await fetch(`${service.urls.cache}/cache/store`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const stText = await st.text();
    if (st.status !== 202) throw new Error(`25 MiB store answered ${st.status}: ${stText.slice(0, 300)}`);
    const t1 = performance.now();
    // the store's own peak, then the retrieval's from a fresh reset
    const afterStore = peakReset ? peakRssBytes(pid) : polled;
    const beforeRetrieve = rssBytes(pid);
    if (peakReset) resetPeakRss(pid);
    const got = await fetch(`${service.urls.cache}/cache/message/${enc(r.did)}/${messageId}`, {
      headers: proofHeaders(ctx.profile, r, service.urls.cache, 'pull_message', messageId),
    });
    const buf = Buffer.from(await got.arrayBuffer());
    const t2 = performance.now();
    if (got.status !== 200) throw new Error(`25 MiB retrieval answered ${got.status}: ${buf.subarray(0, 300).toString()}`);
    const env = (JSON.parse(buf.toString('utf8')) as { message: { envelope: { message_id: string } } }).message.envelope;
    if (env.message_id !== messageId || buf.length < size) throw new Error('the 25 MiB envelope did not come back intact');
    clearInterval(poll);
    polled = Math.max(polled, rssBytes(pid));
    const peak = Math.max(afterStore, peakReset ? peakRssBytes(pid) : polled);
    const retrievePeak = peakReset ? peakRssBytes(pid) : polled;
    const growth = peak - before;
    const mib = (x: number) => Math.round((x / MiB) * 10) / 10;
    return {
      id: 'large_envelope_rss',
      title: `Cache: one ${Math.round(size / MiB)} MiB envelope stored and retrieved — service peak RSS growth`,
      value: Math.round((growth / MiB) * 10) / 10,
      unit: 'MiB',
      reference: 'envelope_bytes',
      referenceValue: size / MiB,
      target: { op: '<=', ratio: 4 },
      extra: {
        rss_before_mib: mib(before),
        peak_rss_mib: mib(peak),
        store_peak_growth_mib: mib(afterStore - before),
        retrieve_peak_growth_mib: mib(retrievePeak - beforeRetrieve),
        store_ms: Math.round(t1 - t0),
        retrieve_ms: Math.round(t2 - t1),
        response_bytes: buf.length,
      },
      details: { peak_source: peakReset ? 'VmHWM after clear_refs' : 'VmRSS polled every 5 ms', polled_peak_mib: mib(polled) },
    };
  } finally {
    clearInterval(poll);
  }
}
