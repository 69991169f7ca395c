/** `ddn persona …`: DNS and named personas (http-api.md §7). */
import { PersonaClient } from '../client/persona-client.js';
import { group, leaf, UsageError, type OptionDefs } from './command.js';
import { directoryContext, didUrl, DIRECTORY_OPTIONS, positiveInt, readJsonObject, WAIT_OPTIONS } from './common.js';
import { finish } from './did-submit.js';
import type { CliCommand } from './io.js';
import { SIGNER_OPTIONS, signerOf } from './signer-options.js';

const P = 'ddn persona';
const NAME = ['PERSONA'] as const;
const OPERATOR = { operator: { type: 'string', arg: 'DID', help: 'operator DID', required: true } } as const;
const CHALLENGE = { challenge: { type: 'string', arg: 'ID', help: 'DNS challenge id', required: true } } as const;
const INTENT = {
  'controller-key': { type: 'string', multiple: true, arg: 'ID', help: "controller key id of the operator (default: the signer's)" },
  constraints: { type: 'string', arg: 'FILE', help: 'delivery constraints (JSON object)' },
} as const;
const WRITE = { ...SIGNER_OPTIONS, ...DIRECTORY_OPTIONS, ...WAIT_OPTIONS } as const;

async function personas(o: { directory?: string; profile?: string }) {
  const dir = await directoryContext(o);
  return { dir, client: new PersonaClient(dir.client.baseUrl, dir.profile, dir.fetch) };
}

function controllers(o: { 'controller-key': string[] }, operator: string, signerKeyId: string): string[] {
  return o['controller-key'].length > 0 ? o['controller-key'].map((k) => didUrl(operator, k, true)) : [signerKeyId];
}

function read<O extends OptionDefs>(
  name: string,
  summary: string,
  options: O,
  get: (c: PersonaClient, persona: string, o: Record<string, unknown>) => Promise<unknown>,
): CliCommand {
  return leaf(`${P} ${name}`, {
    summary,
    synopsis: 'PERSONA',
    options: { ...options, ...DIRECTORY_OPTIONS },
    positionals: NAME,
    requiredPositionals: 1,
    async run(_ctx, o, [persona]) {
      const values = o as Record<string, unknown>;
      return get((await personas(values as { directory?: string; profile?: string })).client, persona!, values);
    },
  });
}

const register = (renew: boolean): CliCommand =>
  leaf(`${P} ${renew ? 'renew' : 'register'}`, {
    summary: renew ? 'renew a DNS persona after verifying its TXT record' : 'register a DNS persona after verifying its TXT record',
    synopsis: 'PERSONA --challenge ID --operator DID --key FILE',
    options: { ...CHALLENGE, ...OPERATOR, ...INTENT, 'verification-days': { type: 'string', arg: 'N', help: 'validity of the DNS proof (1-365)' }, ...WRITE },
    positionals: NAME,
    requiredPositionals: 1,
    async run(ctx, o, [persona]) {
      const { dir, client } = await personas(o);
      const signer = signerOf(o, o.operator);
      ctx.info(`verifying the DNS record of ${persona} and signing locally…`);
      const submitted = await client.registerDns(persona!, {
        challengeId: o.challenge,
        operatorDid: o.operator,
        renew,
        signer,
        controllerKeys: renew ? undefined : controllers(o, o.operator, signer.keyId),
        verificationDays: positiveInt('verification-days', o['verification-days']),
        deliveryConstraints: o.constraints === undefined ? undefined : readJsonObject(o.constraints, 'constraints'),
      });
      return finish(ctx, dir, o, submitted, { persona, operator_did: o.operator, operation: renew ? 'Renew' : 'Register' });
    },
  });

const PERSONA_COMMANDS: Record<string, CliCommand> = {
  show: read('show', 'print a persona', {}, (c, p) => c.read(p)),
  nonces: read('nonces', "print a persona's nonces", {}, (c, p) => c.nonces(p)),
  challenge: leaf(`${P} challenge`, {
    summary: 'ask for a DNS challenge (the TXT record to publish)',
    synopsis: 'PERSONA --operator DID [--action register|renew|transfer]',
    options: { ...OPERATOR, action: { type: 'string', arg: 'ACTION', help: 'register, renew or transfer', default: 'register' }, ...DIRECTORY_OPTIONS },
    positionals: NAME,
    requiredPositionals: 1,
    async run(ctx, o, [persona]) {
      const action = ({ register: 'register_persona', renew: 'renew_persona', transfer: 'transfer_persona' } as const)[o.action as 'register'];
      if (action === undefined) throw new UsageError('--action must be register, renew or transfer');
      const ch = await (await personas(o)).client.createChallenge(persona!, o.operator, action);
      ctx.info(
        `publish TXT ${String(ch.record_name)} "${String(ch.record_value)}", then run '${P} ${o.action} ${persona} --challenge ${String(ch.challenge_id)} …'`,
      );
      return ch;
    },
  }),
  'challenge-status': read('challenge-status', 'print a DNS challenge', CHALLENGE, (c, p, o) => c.challenge(p, o.challenge as string)),
  register: register(false),
  renew: register(true),
  'register-named': leaf(`${P} register-named`, {
    summary: 'register a named (single-label, no DNS) persona',
    synopsis: 'PERSONA --operator DID --key FILE',
    options: { ...OPERATOR, ...INTENT, ...WRITE },
    positionals: NAME,
    requiredPositionals: 1,
    async run(ctx, o, [persona]) {
      const { dir, client } = await personas(o);
      const signer = signerOf(o, o.operator);
      const submitted = await client.registerNamed(persona!, {
        operatorDid: o.operator,
        signer,
        controllerKeys: controllers(o, o.operator, signer.keyId),
        deliveryConstraints: o.constraints === undefined ? undefined : readJsonObject(o.constraints, 'constraints'),
      });
      return finish(ctx, dir, o, submitted, { persona, operator_did: o.operator, operation: 'RegisterNamed' });
    },
  }),
  revoke: leaf(`${P} revoke`, {
    summary: 'revoke a persona',
    synopsis: 'PERSONA --operator DID --key FILE',
    options: { ...OPERATOR, ...WRITE },
    positionals: NAME,
    requiredPositionals: 1,
    async run(ctx, o, [persona]) {
      const { dir, client } = await personas(o);
      const submitted = await client.revoke(persona!, { operatorDid: o.operator, signer: signerOf(o, o.operator) });
      return finish(ctx, dir, o, submitted, { persona, operator_did: o.operator, operation: 'Revoke' });
    },
  }),
  'rotate-controllers': leaf(`${P} rotate-controllers`, {
    summary: "replace a persona's controller keys (the signer must be in both sets)",
    synopsis: 'PERSONA --operator DID --key FILE --controller-key ID…',
    options: { ...OPERATOR, 'controller-key': { ...INTENT['controller-key'], required: true }, ...WRITE },
    positionals: NAME,
    requiredPositionals: 1,
    async run(ctx, o, [persona]) {
      const { dir, client } = await personas(o);
      const signer = signerOf(o, o.operator);
      const submitted = await client.rotateControllers(persona!, { operatorDid: o.operator, signer, controllerKeys: controllers(o, o.operator, signer.keyId) });
      return finish(ctx, dir, o, submitted, { persona, operator_did: o.operator, operation: 'RotateControllers' });
    },
  }),
  'transfer-accept': leaf(`${P} transfer-accept`, {
    summary: 'new operator: verify a transfer challenge and sign the acceptance (give the output to the current operator)',
    synopsis: 'PERSONA --challenge ID --operator NEW_DID --key FILE',
    options: {
      ...CHALLENGE,
      ...OPERATOR,
      ...INTENT,
      'verification-days': { type: 'string', arg: 'N', help: 'validity of the DNS proof (1-365)' },
      ...SIGNER_OPTIONS,
      ...DIRECTORY_OPTIONS,
    },
    positionals: NAME,
    requiredPositionals: 1,
    async run(_ctx, o, [persona]) {
      const { client } = await personas(o);
      const signer = signerOf(o, o.operator);
      return client.acceptTransfer(persona!, {
        challengeId: o.challenge,
        newOperatorDid: o.operator,
        signer,
        controllerKeys: controllers(o, o.operator, signer.keyId),
        verificationDays: positiveInt('verification-days', o['verification-days']),
        deliveryConstraints: o.constraints === undefined ? undefined : readJsonObject(o.constraints, 'constraints'),
      });
    },
  }),
  'transfer-complete': leaf(`${P} transfer-complete`, {
    summary: "current operator: complete a transfer with the new operator's signature",
    synopsis: 'PERSONA --challenge ID --operator CURRENT_DID --new-operator-signature SIG --key FILE',
    options: { ...CHALLENGE, ...OPERATOR, 'new-operator-signature': { type: 'string', arg: 'SIG', help: 'from transfer-accept', required: true }, ...WRITE },
    positionals: NAME,
    requiredPositionals: 1,
    async run(ctx, o, [persona]) {
      const { dir, client } = await personas(o);
      const submitted = await client.completeTransfer(persona!, {
        challengeId: o.challenge,
        operatorDid: o.operator,
        newOperatorSignature: o['new-operator-signature'],
        signer: signerOf(o, o.operator),
      });
      return finish(ctx, dir, o, submitted, { persona, operator_did: o.operator, operation: 'Transfer' });
    },
  }),
};

/** The `persona` command. */
export const personaCommand = group(P, 'DNS and named personas: challenges, registration, renewal, revocation, rotation, transfer', PERSONA_COMMANDS);
