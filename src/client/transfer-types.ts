/** Wire shapes of delivery resolution (http-api.md §6), the Relay (§10.3, §10.5) and Cache retrieval (§11.5, §11.6). */

/** Delivery resolution (§6): the same types the Directory builds it as. */
export type { EffectiveConstraintsJson } from '../wire/json-forms.js';
export type { DeliveryResolutionResponse } from '../wire/directory.js';

/** The Relay's answers (§10.5): the same types the Relay builds them as. */
export type { DeliveryMode, DeliveryResult, RelayLimitsResponse } from '../wire/relay.js';

/** The Cache's answers (§11.5, §11.6): the same types the Cache's routes declare. */
export type {
  CacheAckResponse,
  CacheChunksResponse,
  CacheMessageItem,
  CacheMessageResponse,
  CacheMessagesResponse,
  CacheSummaryItem,
  CacheSummaryResponse,
} from '../wire/cache.js';
