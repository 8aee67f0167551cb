import type { Json, JsonObject } from './json.js'

/** How a wait URL is made (`waitUrl(key, options)`). */
export interface WaitUrlOptions {
  /** How long the URL works; default 24 hours (the wait's own timeout may end it sooner). */
  expiresInMs?: number
  /**
   * Default true: a used URL answers 410. False: a repeat POST after the wait completed
   * answers 200 `{ completed: false }` and writes nothing (for providers that redeliver).
   */
  singleUse?: boolean
  /**
   * Require an HMAC-SHA256 signature of the raw body, hex, in `header` (default
   * `x-signature`; a `sha256=` prefix is accepted). `secret`: this URL's; without it, the
   * engine's `waitUrls.signatureSecret`.
   */
  signature?: { secret?: string; header?: string }
}

/** What an effect's handler sees in place of `waitUrl(key)`: the URL and its token. */
export interface WaitUrl {
  url: string
  token: string
  /** Recorded in the run's log when the URL completes its wait (never the token). */
  tokenId: string
  expiresAt: number
}

/** The placeholder's marker key in an effect's input. */
export const WAIT_URL_KEY = '$waitUrl'

/**
 * A placeholder for a wait URL in an effect's input: the log records it as is, and the effect's
 * handler receives a fresh `WaitUrl` (`{ url, token, tokenId, expiresAt }`) in its place, made
 * for the wait with key `key` of the invoking thread (a `commands.wait({ url: {} }, { key })`).
 * The token never enters the log (docs/schedules.md, "Wait URLs").
 *
 * @example
 * commands.invoke('mail.send', { to, link: waitUrl('answer') }, { key: 'send' })
 */
export function waitUrl(key: string, options: WaitUrlOptions = {}): Json {
  const spec: JsonObject = { key }
  if (options.expiresInMs !== undefined) spec.expiresInMs = options.expiresInMs
  if (options.singleUse !== undefined) spec.singleUse = options.singleUse
  if (options.signature !== undefined) {
    const signature: JsonObject = {}
    if (options.signature.secret !== undefined) signature.secret = options.signature.secret
    if (options.signature.header !== undefined) signature.header = options.signature.header
    spec.signature = signature
  }
  return { [WAIT_URL_KEY]: spec }
}
