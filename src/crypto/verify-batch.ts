/**
 * The wire between the main thread and the verifier thread: a batch of (public key, signature, texts) packed
 * into one transferable buffer — per item the text count (1 byte), the key (32), the signature (64), then each
 * text as a 4-byte big-endian length and its bytes. Keys are 32 bytes and signatures 64 (the caller checks).
 */

/** Texts per signature the one-byte count holds. */
export const MAX_BATCH_TEXTS = 255;

export interface VerifyItem {
  readonly publicKey: Uint8Array;
  readonly signature: Uint8Array;
  readonly texts: readonly Uint8Array[];
}

export interface VerifyBatchRequest {
  readonly id: number;
  readonly packed: ArrayBuffer;
}

export interface VerifyBatchReply {
  readonly id: number;
  readonly verdicts: ArrayBuffer;
}

export function packBatch(items: readonly VerifyItem[]): ArrayBuffer {
  let size = 0;
  for (const it of items) {
    size += 1 + 32 + 64;
    for (const t of it.texts) size += 4 + t.length;
  }
  const buffer = new ArrayBuffer(size);
  const out = new Uint8Array(buffer);
  const view = new DataView(buffer);
  let o = 0;
  for (const it of items) {
    out[o++] = it.texts.length;
    out.set(it.publicKey, o);
    out.set(it.signature, o + 32);
    o += 96;
    for (const t of it.texts) {
      view.setUint32(o, t.length);
      out.set(t, o + 4);
      o += 4 + t.length;
    }
  }
  return buffer;
}

export function unpackBatch(packed: Uint8Array): VerifyItem[] {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  const items: VerifyItem[] = [];
  let o = 0;
  while (o < packed.length) {
    const n = packed[o++];
    const publicKey = packed.subarray(o, o + 32);
    const signature = packed.subarray(o + 32, o + 96);
    o += 96;
    const texts: Uint8Array[] = [];
    for (let i = 0; i < n; i++) {
      const len = view.getUint32(o);
      texts.push(packed.subarray(o + 4, o + 4 + len));
      o += 4 + len;
    }
    items.push({ publicKey, signature, texts });
  }
  return items;
}
