import { digest128 } from './digest.js'

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))
/** Entropy is drawn in blocks: one getRandomValues call per 409 ids, not one per id. */
const POOL_BYTES = 4096
let pool = new Uint8Array(0)
let offset = 0

/**
 * The default run id: `run_` and a version-7 UUID. One function, so the engine's default `Ids`
 * and a client that picks the id of a streaming start agree on one format.
 */
export const newRunId = (nowMs: number): string => `run_${timeOrderedUuid(nowMs)}`

/**
 * An RFC 9562 version-7 UUID: 48 bits of Unix milliseconds, then 74 random bits. As unguessable
 * for sharing as a v4, but ids made later sort later, so a store keyed by run id appends new
 * runs at the end of its index instead of scattering writes over every page (in SQLite, ~2×
 * throughput for concurrent runs). Uses Web Crypto, so it runs in browsers too; the caller
 * passes the time (core reads no clock).
 */
export function timeOrderedUuid(nowMs: number): string {
  if (offset + 10 > pool.length) {
    pool = globalThis.crypto.getRandomValues(new Uint8Array(POOL_BYTES))
    offset = 0
  }
  const ms = Math.max(0, Math.floor(nowMs)).toString(16).padStart(12, '0').slice(-12)
  const r = offset
  offset += 10
  const hex = (i: number) => HEX[pool[r + i]]
  return (
    `${ms.slice(0, 8)}-${ms.slice(8)}-${HEX[0x70 | (pool[r] & 0x0f)]}${hex(1)}-` +
    `${HEX[0x80 | (pool[r + 2] & 0x3f)]}${hex(3)}-${hex(4)}${hex(5)}${hex(6)}${hex(7)}${hex(8)}${hex(9)}`
  )
}

/**
 * The run id of a start that gives an `idempotencyKey` and no `runId`: `run_` and an RFC 9562
 * version-8 UUID derived from the key, so every retry of that start, from any process or
 * client, names the same run and the engine's start identity check decides (the same start
 * returns the run, a different one is `START_CONFLICT`).
 */
export function startKeyRunId(idempotencyKey: string): string {
  const h = digest128(`skein.start:${idempotencyKey}`)
  const variant = ((Number.parseInt(h[16], 16) & 0x3) | 0x8).toString(16)
  return `run_${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`
}
