import { InvalidRequestError, SkeinError } from '../core/errors.js'
import { type Json, MAX_DEPTH } from '../core/json.js'
import { httpError } from './error-response.js'

/** Keys that could reach an object's prototype chain when a body is spread or merged later. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

/**
 * Reads a JSON request body defensively: `application/json` only (415), at most `maxBytes`
 * counted while the body streams in (413, so a lying or absent content-length cannot make
 * us buffer more), valid UTF-8, nesting at most 64, and no `__proto__`/`constructor` keys.
 * Every failure is a 4xx SkeinError; nothing here touches the store.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<Json> {
  return (await readJsonBodyText(request, maxBytes)).value
}

/** `readJsonBody`, and the body's text as it came (a signature is over the raw text). */
export async function readJsonBodyText(
  request: Request,
  maxBytes: number,
): Promise<{ value: Json; text: string }> {
  checkContentType(request.headers.get('content-type'))
  const declared = request.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    throw tooLarge(maxBytes)
  }
  const bytes = await readLimited(request, maxBytes)
  if (bytes.byteLength === 0) throw new InvalidRequestError('request body is empty')
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    throw new InvalidRequestError('request body is not valid UTF-8')
  }
  checkDepth(text)
  let forbidden: string | undefined
  let value: Json
  try {
    value = JSON.parse(text, function reviver(key, item) {
      if (FORBIDDEN_KEYS.has(key) && !Array.isArray(this)) forbidden ??= key
      return item
    })
  } catch {
    throw new InvalidRequestError('request body is not valid JSON')
  }
  if (forbidden !== undefined) {
    throw new InvalidRequestError(`request body contains the forbidden key "${forbidden}"`, {
      key: forbidden,
    })
  }
  return { value, text }
}

function checkContentType(header: string | null): void {
  const [type, ...params] = (header ?? '').split(';').map((part) => part.trim().toLowerCase())
  const charset = params.find((p) => p.startsWith('charset='))?.slice(8)
  const okCharset = charset === undefined || charset === 'utf-8' || charset === '"utf-8"'
  if (type !== 'application/json' || !okCharset) {
    throw httpError('UNSUPPORTED_MEDIA_TYPE', 'request body must be application/json (UTF-8)', {
      contentType: header ?? null,
    })
  }
}

const tooLarge = (maxBytes: number) =>
  httpError('PAYLOAD_TOO_LARGE', `request body exceeds ${maxBytes} bytes`, { maxBytes })

async function readLimited(request: Request, maxBytes: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      total += value.byteLength
      if (total > maxBytes) {
        // Stop reading now; the rest of the upload is the adapter's to drain or drop.
        reader.cancel().catch(() => {})
        throw tooLarge(maxBytes)
      }
      chunks.push(value)
    }
  } catch (error) {
    if (SkeinError.is(error)) throw error
    throw new InvalidRequestError('request body could not be read')
  }
  if (chunks.length === 1) return chunks[0]
  const out = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}

/**
 * Rejects JSON nested deeper than MAX_DEPTH before JSON.parse builds it, with one linear
 * scan that skips string contents.
 */
function checkDepth(text: string): void {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92)
        i++ // backslash: skip the escaped char
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91) {
      if (++depth > MAX_DEPTH) {
        throw new InvalidRequestError(`request body nests deeper than ${MAX_DEPTH}`, {
          maxDepth: MAX_DEPTH,
        })
      }
    } else if (c === 125 || c === 93) depth--
  }
}
