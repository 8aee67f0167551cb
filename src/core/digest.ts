/**
 * A 128-bit digest of a string, as 32 hex characters: pure, synchronous and the same in every
 * JavaScript runtime (browsers included), so the engine, the HTTP layer and the client agree.
 * Not cryptographic, and it needs not be: it compares requests that share an idempotency key
 * (whoever holds the key chooses both bodies) and names the run a start key creates.
 * Digests are recorded in logs and derive run ids: this function must never change.
 */
export function digest128(text: string): string {
  let a = 0x9e3779b9 ^ text.length
  let b = 0x85ebca6b
  let c = 0xc2b2ae35
  let d = 0x27d4eb2f
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    a = rotl(Math.imul(a ^ code, 0xcc9e2d51), 15)
    b = rotl(Math.imul(b ^ code, 0x1b873593), 13)
    c = rotl(Math.imul(c ^ code, 0x01000193), 17)
    d = rotl(Math.imul(d ^ code, 0x5bd1e995), 11)
  }
  // Each lane's final value depends on every other lane's, so no lane is read alone.
  a = fmix(a ^ d)
  b = fmix(b ^ a)
  c = fmix(c ^ b)
  d = fmix(d ^ c)
  return hex(a) + hex(b) + hex(c) + hex(d)
}

const rotl = (x: number, r: number): number => (x << r) | (x >>> (32 - r))

/** MurmurHash3's finalizer: every input bit flips each output bit with probability ~1/2. */
function fmix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

const hex = (x: number): string => x.toString(16).padStart(8, '0')
