/**
 * Wire shapes of Directory reads (http-api.md §3) as TypeBox schemas: the routes declare them (OpenAPI), the
 * Directory builds its answers as their static types and the SDK reads them as the same types. Routes whose
 * shapes are not declared here yet document a JSON object (src/directory/rate-classes.ts).
 */
import { Type, type Static } from 'typebox';

/** A failed transaction's or block extrinsic's error (§3.4, §3.5). */
export const LedgerErrorSchema = Type.Object({ code: Type.String(), message: Type.String(), ledger_error: Type.String() });
export type LedgerErrorJson = Static<typeof LedgerErrorSchema>;

/** `GET /registration-status/{did}` (§3.2). */
export const RegistrationStatusSchema = Type.Object(
  {
    did: Type.String(),
    registration_status: Type.Enum(['pending', 'confirmed', 'missing']),
    version: Type.Integer(),
    deactivated: Type.Boolean(),
    tx_id: Type.Optional(Type.String()),
    tx_hash: Type.Optional(Type.String()),
    last_error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
  },
  { title: 'RegistrationStatus' },
);
export type RegistrationStatusResponse = Static<typeof RegistrationStatusSchema>;

const decimal = (description: string) => Type.String({ pattern: '^[0-9]+$', description });

/** `GET /dids/{did}/nonces` (§3.3): next usable values, decimal strings. */
export const NoncesSchema = Type.Object(
  {
    did: Type.String(),
    alias_nonce: decimal('next alias nonce'),
    document_nonce: decimal('next document nonce'),
    root_pubkey_nonce: decimal('next root key nonce'),
    control_nonce: decimal('next control nonce'),
    policy_nonce: decimal('next v2 policy nonce'),
    policy_v3_nonce: decimal('next v3 policy nonce'),
    operator_nonce: decimal('next operator nonce'),
    application_nonce: decimal('next application nonce'),
  },
  { title: 'Nonces' },
);
export type NoncesResponse = Static<typeof NoncesSchema>;

/** `GET /transactions/{tx_hash}` (§3.4). */
export const TransactionSchema = Type.Object(
  {
    tx_hash: Type.String(),
    status: Type.Enum(['pending', 'in_block', 'finalized', 'failed']),
    extrinsic: Type.String(),
    submitted_at: Type.String(),
    block_number: Type.Optional(Type.Integer()),
    block_hash: Type.Optional(Type.String()),
    error: Type.Optional(LedgerErrorSchema),
  },
  { title: 'Transaction' },
);
export type TransactionResponse = Static<typeof TransactionSchema>;

/** `GET /aliases/{alias}` (§3.6). */
export const AliasSchema = Type.Object({ alias: Type.String(), did: Type.String() }, { title: 'Alias' });
export type AliasResponse = Static<typeof AliasSchema>;
