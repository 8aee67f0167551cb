import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import {
  InvalidInputError,
  SignatureInvalidError,
  WaitUrlGoneError,
  WaitUrlNotFoundError,
} from '../core/errors.js'
import type { RunFold, WaitRecord } from '../core/fold/index.js'
import type { JsonObject } from '../core/json.js'
import type { WaitUrlRecord } from '../core/ports.js'
import { WAIT_URL_KEY, type WaitUrl } from '../core/wait-url.js'
import type { EngineContext } from './context.js'
import type { WaitUrlConfig, WaitUrlOutcome, WaitUrlRequest, WaitUrls } from './schedule-api.js'

const DAY = 86_400_000
/** 32 random bytes: 256 bits, unguessable. */
const TOKEN = /^wu_[A-Za-z0-9_-]{43}$/

export const hashToken = (token: string): string =>
  createHash('sha256').update(token, 'utf8').digest('hex')

/** Checks `waitUrls` at creation (a bad option is the caller's code). */
export function resolveWaitUrlConfig(config: WaitUrlConfig = {}): Omit<WaitUrls, 'store'> {
  const baseUrl = (config.baseUrl ?? '').replace(/\/+$/, '')
  if (baseUrl !== '' && !/^https?:\/\/[^\s]+$/.test(baseUrl)) {
    throw new TypeError(
      `createEngine: waitUrls.baseUrl must be an http(s) URL, got ${config.baseUrl}`,
    )
  }
  const secret = config.signatureSecret
  if (secret !== undefined && (typeof secret !== 'string' || secret.length < 16)) {
    throw new TypeError(
      'createEngine: waitUrls.signatureSecret must be a string of at least 16 characters',
    )
  }
  return secret === undefined ? { baseUrl } : { baseUrl, signatureSecret: secret }
}

const isPlaceholder = (value: unknown): value is { [WAIT_URL_KEY]: JsonObject } =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  WAIT_URL_KEY in value &&
  Object.keys(value).length === 1

/** Whether an effect's input holds a `waitUrl(key)` placeholder (a few levels deep at most). */
export function hasWaitUrl(value: unknown, depth = 0): boolean {
  if (typeof value !== 'object' || value === null || depth > 4) return false
  if (isPlaceholder(value)) return true
  // Loops, not Object.values(…).some(…): every attempt of every effect asks, most answer no.
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (hasWaitUrl(value[i], depth + 1)) return true
    return false
  }
  const record = value as Record<string, unknown>
  for (const key in record)
    if (Object.hasOwn(record, key) && hasWaitUrl(record[key], depth + 1)) return true
  return false
}

/**
 * The effect's input for its handler: each `waitUrl(key)` placeholder replaced by a fresh wait
 * URL for the wait `key` of the effect's thread. Only the token's hash is stored; the token
 * lives in this value, which is handed to the handler and never recorded.
 */
export async function mintWaitUrls(
  ctx: EngineContext,
  runId: string,
  threadId: string,
  input: unknown,
  depth = 0,
): Promise<unknown> {
  if (typeof input !== 'object' || input === null || depth > 4) return input
  if (isPlaceholder(input)) return mint(ctx, runId, threadId, input[WAIT_URL_KEY])
  if (Array.isArray(input)) {
    return Promise.all(input.map((item) => mintWaitUrls(ctx, runId, threadId, item, depth + 1)))
  }
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(input)) {
    out[key] = await mintWaitUrls(ctx, runId, threadId, value, depth + 1)
  }
  return out
}

async function mint(
  ctx: EngineContext,
  runId: string,
  threadId: string,
  spec: JsonObject,
): Promise<WaitUrl> {
  const urls = ctx.waitUrls
  if (!urls) throw new Error('this engine has no wait URL store')
  const key = spec.key
  if (typeof key !== 'string' || key.length === 0) {
    throw new InvalidInputError('waitUrl(key): key must be the key of a url wait of the thread')
  }
  const expiresInMs = spec.expiresInMs ?? DAY
  if (typeof expiresInMs !== 'number' || !(expiresInMs > 0) || expiresInMs > 366 * DAY) {
    throw new InvalidInputError(
      'waitUrl: expiresInMs must be a positive number of ms, at most 366 days',
    )
  }
  const token = `wu_${randomBytes(32).toString('base64url')}`
  const hash = hashToken(token)
  const now = ctx.clock.now()
  const options: JsonObject = { singleUse: spec.singleUse !== false }
  if (spec.signature !== undefined && spec.signature !== null) options.signature = spec.signature
  const record: WaitUrlRecord = {
    hash,
    tokenId: `wt_${hash.slice(0, 24)}`,
    runId,
    threadId,
    waitKey: key,
    expiresAt: now + expiresInMs,
    options,
    usedAt: null,
    createdAt: now,
  }
  await urls.store.insert(record)
  return {
    url: `${urls.baseUrl}/wait-urls/${token}`,
    token,
    tokenId: record.tokenId,
    expiresAt: record.expiresAt,
  }
}

/**
 * Looks a POSTed token up and checks what needs no run: known (else WAIT_URL_NOT_FOUND),
 * unused and unexpired (else WAIT_URL_GONE), signed when it must be (else SIGNATURE_INVALID).
 */
export async function checkWaitUrl(
  urls: WaitUrls,
  token: string,
  request: WaitUrlRequest,
  now: number,
): Promise<{ record: WaitUrlRecord; repeat: boolean }> {
  const record = TOKEN.test(token) ? await urls.store.find(hashToken(token)) : null
  if (!record) throw new WaitUrlNotFoundError('no wait URL has this token: nothing was written')
  const options = record.options as { singleUse?: boolean; signature?: JsonObject }
  if (record.usedAt !== null && options.singleUse !== false) {
    throw new WaitUrlGoneError('this wait URL was used already: nothing was written', {
      tokenId: record.tokenId,
    })
  }
  if (now >= record.expiresAt) {
    throw new WaitUrlGoneError('this wait URL expired: nothing was written', {
      tokenId: record.tokenId,
    })
  }
  if (options.signature) checkSignature(urls, options.signature, request)
  return { record, repeat: record.usedAt !== null }
}

function checkSignature(urls: WaitUrls, signature: JsonObject, request: WaitUrlRequest): void {
  const secret = typeof signature.secret === 'string' ? signature.secret : urls.signatureSecret
  const header = typeof signature.header === 'string' ? signature.header : 'x-signature'
  const given = (request.header(header) ?? '').trim().replace(/^sha256=/i, '')
  if (!secret) {
    throw new SignatureInvalidError('this wait URL needs a signature secret the host does not have')
  }
  const expected = createHmac('sha256', secret).update(request.text, 'utf8').digest()
  const actual = /^[0-9a-f]{64}$/i.test(given) ? Buffer.from(given, 'hex') : Buffer.alloc(32)
  if (!timingSafeEqual(expected, actual) || !/^[0-9a-f]{64}$/i.test(given)) {
    throw new SignatureInvalidError(
      `the ${header} header is missing or not the HMAC-SHA256 of the body: nothing was written`,
    )
  }
}

/** The open url wait a token completes, if any. */
export function urlWaitOf(
  fold: RunFold,
  record: Pick<WaitUrlRecord, 'threadId' | 'waitKey'>,
): WaitRecord | undefined {
  for (const waitId in fold.waits) {
    const wait = fold.waits[waitId]
    if (
      wait?.status === 'open' &&
      wait.threadId === record.threadId &&
      wait.key === record.waitKey &&
      'url' in wait.on
    ) {
      return wait
    }
  }
  return undefined
}

export type { WaitUrlConfig, WaitUrlOutcome, WaitUrlRequest, WaitUrls }
