const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

/**
 * An RFC 9562 version-7 UUID: 48 bits of Unix milliseconds, then 74 random bits. As unguessable
 * for sharing as a v4, but ids made later sort later, so a store keyed by run id appends new
 * runs at the end of its index instead of scattering writes over every page (in SQLite, ~2×
 * throughput for concurrent runs). Uses Web Crypto, so it runs in browsers too; the caller
 * passes the time (core reads no clock).
 */
export function timeOrderedUuid(nowMs: number): string {
  const b = new Uint8Array(16)
  globalThis.crypto.getRandomValues(b)
  let ms = Math.max(0, Math.floor(nowMs))
  for (let i = 5; i >= 0; i--) {
    b[i] = ms % 256
    ms = Math.floor(ms / 256)
  }
  b[6] = 0x70 | (b[6] & 0x0f)
  b[8] = 0x80 | (b[8] & 0x3f)
  let out = ''
  for (let i = 0; i < 16; i++) {
    out += HEX[b[i]]
    if (i === 3 || i === 5 || i === 7 || i === 9) out += '-'
  }
  return out
}
