import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  type KeyObject,
  randomBytes,
} from 'node:crypto'
import { InvalidRequestError, PayloadUndecodableError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import { withJsonText } from '../core/json-text.js'
import type { CodecContext, PayloadCodec } from '../core/payload-codec.js'

/** The algorithm name a stored value carries (`$codec`). */
export const AES_GCM = 'aes-256-gcm'

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/
const IV_BYTES = 12
const TAG_BYTES = 16

export interface AesGcmCodecOptions {
  /**
   * Every key that may have written stored data, by key id (32 bytes each: a `Uint8Array` or
   * its base64 text). Keep a retired key here until no stored run was written with it.
   */
  keys: Readonly<Record<string, Uint8Array | string>>
  /** The key id new writes use. */
  current: string
}

/** A value as the AES-GCM codec stores it: the key id in clear, `data` = iv | tag | ciphertext. */
export interface AesGcmStored {
  $codec: typeof AES_GCM
  kid: string
  data: string
}

/** IVs drawn from the CSPRNG 1,024 at a time (one call costs as much as a seal), each used once. */
function ivSource(): () => Buffer {
  let pool = Buffer.alloc(0)
  let at = 0
  return () => {
    if (at + IV_BYTES > pool.length) {
      pool = randomBytes(IV_BYTES * 1024)
      at = 0
    }
    at += IV_BYTES
    return pool.subarray(at - IV_BYTES, at)
  }
}

const aadOf = (context: CodecContext) =>
  Buffer.from(`skein/${context.part}/${context.runId}/${context.id}`, 'utf8')

function keyObject(id: string, key: Uint8Array | string): KeyObject {
  if (!KEY_ID.test(id))
    throw new InvalidRequestError(
      `aesGcmCodec: key id ${JSON.stringify(id)} must be 1-64 of A-Z a-z 0-9 . _ -`,
    )
  const bytes = typeof key === 'string' ? Buffer.from(key, 'base64') : key
  if (bytes.byteLength !== 32)
    throw new InvalidRequestError(
      `aesGcmCodec: key ${id} has ${bytes.byteLength} bytes; AES-256 takes 32 (openssl rand -base64 32)`,
    )
  return createSecretKey(bytes)
}

/**
 * The ready-made payload codec (docs/data-lifecycle.md, "Payloads encrypted at rest"): each
 * value is JSON-serialized and sealed with AES-256-GCM under the current key, a fresh 96-bit
 * random IV, and the value's place (part, run id, seq) as associated data. The stored value
 * names its key id, so keys rotate: new writes use `current`, older values decode with the key
 * that wrote them while it is listed in `keys`.
 *
 * @example
 * const codec = aesGcmCodec({
 *   keys: { '2026-11': process.env.SKEIN_KEY_NOV!, '2026-12': process.env.SKEIN_KEY_DEC! },
 *   current: '2026-12',
 * })
 */
export function aesGcmCodec(options: AesGcmCodecOptions): PayloadCodec {
  const keys = new Map<string, KeyObject>()
  for (const [id, key] of Object.entries(options?.keys ?? {})) keys.set(id, keyObject(id, key))
  const current = options?.current
  const currentKey = keys.get(current)
  if (!currentKey)
    throw new InvalidRequestError(
      `aesGcmCodec: current key id ${JSON.stringify(current)} is not among keys (${[...keys.keys()].join(', ') || 'none'})`,
    )

  const encoded = (stored: Json): stored is AesGcmStored & { [k: string]: Json } =>
    typeof stored === 'object' &&
    stored !== null &&
    !Array.isArray(stored) &&
    stored.$codec === AES_GCM &&
    typeof stored.kid === 'string' &&
    typeof stored.data === 'string'

  const undecodable = (context: CodecContext, keyId: string | null, reason: string) =>
    new PayloadUndecodableError(
      `cannot decode the ${context.part} payload of run ${context.runId} at ${context.id}: ${reason}`,
      { runId: context.runId, part: context.part, id: context.id, keyId },
    )

  const nextIv = ivSource()
  // The stored value's JSON text is written with it (its key id and base64 need no escapes), so
  // the store does not scan the base64 again (decisions.md, "A sealed payload carries its JSON
  // text to the store").
  const textBefore = `{"$codec":"${AES_GCM}","kid":${JSON.stringify(current)},"data":"`
  return {
    encoded,
    encode(value, context) {
      const iv = nextIv()
      const cipher = createCipheriv(AES_GCM, currentKey, iv)
      cipher.setAAD(aadOf(context))
      const sealed = cipher.update(JSON.stringify(value), 'utf8')
      const final = cipher.final()
      const data = Buffer.concat([iv, cipher.getAuthTag(), sealed, final]).toString('base64')
      return withJsonText({ $codec: AES_GCM, kid: current, data }, `${textBefore}${data}"}`)
    },
    decode(stored, context) {
      if (!encoded(stored)) return stored
      const key = keys.get(stored.kid)
      if (!key)
        throw undecodable(
          context,
          stored.kid,
          `key id ${stored.kid} is not among the codec's keys (${[...keys.keys()].join(', ')})`,
        )
      const bytes = Buffer.from(stored.data, 'base64')
      if (bytes.byteLength < IV_BYTES + TAG_BYTES)
        throw undecodable(context, stored.kid, 'the stored data is truncated')
      try {
        const decipher = createDecipheriv(AES_GCM, key, bytes.subarray(0, IV_BYTES))
        decipher.setAAD(aadOf(context))
        decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
        const text =
          decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES), undefined, 'utf8') +
          decipher.final('utf8')
        return JSON.parse(text) as Json
      } catch {
        throw undecodable(
          context,
          stored.kid,
          `authentication failed under key ${stored.kid} (another key with this id, or data altered or moved)`,
        )
      }
    },
  }
}
