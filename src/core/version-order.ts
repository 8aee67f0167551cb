/**
 * The order of definition versions, used to pick the version a ref without one means:
 * numeric-aware and deterministic, whatever the locale. A version is read as runs of digits
 * (compared as numbers) and runs of anything else (compared by code unit), so
 * `v1 < v2 < v10`, `1.9.0 < 1.10.0` and `2024-02-01 < 2024-11-01`. Where one version is the
 * other plus more (`v1` and `v1.1`, or `1.0.0` and `1.0.0-rc1`), the longer one is higher:
 * pre-release tags are not understood, mark the version you mean with `default: true`.
 * Versions that compare equal this way (`v01`, `v1`) fall back to plain string order.
 */
export function compareVersions(a: string, b: string): number {
  const left = pieces(a)
  const right = pieces(b)
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const order = comparePiece(left[i], right[i])
    if (order !== 0) return order
  }
  if (left.length !== right.length) return left.length - right.length
  return a < b ? -1 : a > b ? 1 : 0
}

const PIECE = /\d+|\D+/g

function pieces(version: string): string[] {
  return version.match(PIECE) ?? []
}

function comparePiece(a: string, b: string): number {
  const aNumber = isDigits(a)
  const bNumber = isDigits(b)
  // A number sorts before text at the same place (`1.0` < `1.x`).
  if (aNumber !== bNumber) return aNumber ? -1 : 1
  if (aNumber) {
    // Digit strings of any length, compared without overflow: strip leading zeros, then length.
    const x = a.replace(/^0+(?=\d)/, '')
    const y = b.replace(/^0+(?=\d)/, '')
    if (x.length !== y.length) return x.length - y.length
  }
  return a < b ? -1 : a > b ? 1 : 0
}

const isDigits = (piece: string): boolean => piece.charCodeAt(0) >= 48 && piece.charCodeAt(0) <= 57
