import { type ErrorInfo, SkeinError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import { type ErrorCode, httpStatusOf, PUBLIC_5XX } from './wire/status.js'
import { attachWireBody } from './wire-body.js'

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' }

/** A JSON Response; `serve` writes its text straight to the socket (see wire-body.ts). */
export function jsonResponse(body: unknown, status = 200, headers?: Record<string, string>) {
  const text = JSON.stringify(body)
  const response = new Response(text, {
    status,
    headers: headers ? Object.assign({}, JSON_HEADERS, headers) : JSON_HEADERS,
  })
  return attachWireBody(response, text)
}

/** Throwable from route code for conditions that have no engine error class (413, 415, 405). */
export function httpError(code: ErrorCode, message: string, details?: Json): SkeinError {
  return new SkeinError(code, message, details)
}

/**
 * The one place that turns anything thrown into the wire error body. Skein errors
 * keep their code, message and details; anything else becomes a bare INTERNAL so no stack,
 * file path or driver message reaches a client.
 */
export function errorInfoOf(error: unknown): ErrorInfo {
  if (!SkeinError.is(error) || error.code === 'ERROR') {
    return { code: 'INTERNAL', message: 'internal error' }
  }
  // A 5xx from a code outside the status table (STORE_ERROR, DETERMINISM_VIOLATION, …) can
  // carry driver messages or file paths: name the code, keep the text out of the body.
  if (httpStatusOf(error.code) >= 500 && !PUBLIC_5XX.has(error.code as ErrorCode)) {
    return { code: 'INTERNAL', message: `internal error (${error.code})` }
  }
  return error.toInfo()
}

export function errorResponse(error: unknown, headers?: Record<string, string>): Response {
  const info = errorInfoOf(error)
  const status = httpStatusOf(info.code)
  const extra: Record<string, string> = { ...headers }
  if (status === 401) extra['www-authenticate'] ??= 'Bearer'
  if (status === 429) extra['retry-after'] ??= '1'
  return jsonResponse({ error: info }, status, extra)
}
