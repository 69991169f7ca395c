/** `ddn key …`: private keys that never leave this machine (PKCS#8 PEM, mode 0600, never overwritten). */
import { messageOf } from '../base/guards.js';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { toHex } from '../base/bytes.js';
import { generatePrivateKey, KeyFileError, readPrivateKeyFile, writePrivateKeyFile, type KeyType } from '../client/key-files.js';
import { multibaseEd25519, multibaseX25519 } from '../protocol/keys.js';
import { group, leaf, UsageError } from './command.js';
import { keysDir } from './identity-book.js';

/** The public half of a key, in the forms DID documents and requests use. */
export function publicKeyJson(type: KeyType, key: KeyObject): { type: KeyType; public_key_multibase: string; public_key_hex: string } {
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  const raw = new Uint8Array(spki.subarray(spki.length - 32));
  return { type, public_key_multibase: type === 'ed25519' ? multibaseEd25519(raw) : multibaseX25519(raw), public_key_hex: `0x${toHex(raw)}` };
}

/** The type of the private key in `path` (Ed25519 or X25519). */
export function keyTypeOf(path: string): KeyType {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new KeyFileError('key_file_unreadable', `cannot read ${path}: ${messageOf(e)}`);
  }
  for (const t of ['ed25519', 'x25519'] as const) {
    try {
      readPrivateKeyFile(path, t);
      return t;
    } catch {
      // try the next type
    }
  }
  throw new KeyFileError('invalid_key_file', `${path} is not an Ed25519 or X25519 PKCS#8 private key${text.includes('BEGIN') ? '' : ' (no PEM header)'}`);
}

function parseType(t: string): KeyType {
  const v = t.toLowerCase();
  if (v !== 'ed25519' && v !== 'x25519') throw new UsageError('--type must be ed25519 or x25519');
  return v;
}

const generate = leaf('ddn key generate', {
  summary: 'create a private key file (Ed25519 signs, X25519 decrypts)',
  synopsis: '[--out FILE] [--type ed25519|x25519]',
  description:
    'Creates a new private key as PKCS#8 PEM with mode 0600. An existing file is never overwritten.\n' +
    'Without --out it goes to the keys/ directory of the identity book ($XDG_CONFIG_HOME/ddn, default\n' +
    '~/.config/ddn), named after its type and public key. Prints the file and the public key.',
  options: {
    out: { type: 'string', arg: 'FILE', help: "the new key file (default: in the identity book's keys/ directory)" },
    type: { type: 'string', arg: 'TYPE', help: 'ed25519 (signing) or x25519 (key agreement)', default: 'ed25519' },
  },
  async run(ctx, o) {
    const type = parseType(o.type ?? 'ed25519');
    const key = generatePrivateKey(type);
    const pub = publicKeyJson(type, key);
    const out = o.out ?? join(keysDir(ctx.io.env), `${type}-${pub.public_key_hex.slice(2, 18)}.pem`);
    writePrivateKeyFile(out, key);
    ctx.info(`wrote ${type} private key to ${out} (mode 0600); keep it, it is the only copy`);
    return { file: out, ...pub };
  },
});

const show = leaf('ddn key public', {
  summary: 'print the public key of a private key file',
  synopsis: '--key FILE',
  options: { key: { type: 'string', arg: 'FILE', help: 'an Ed25519 or X25519 private key file', required: true } },
  async run(_ctx, o) {
    const type = keyTypeOf(o.key);
    return { file: o.key, ...publicKeyJson(type, readPrivateKeyFile(o.key, type)) };
  },
});

/** The `key` command. */
export const keyCommand = group('ddn key', 'generate private keys and show public keys', { generate, public: show });
