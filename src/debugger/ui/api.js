// The HTTP API as any client sees it: the caller's cookies go along (same origin), and a token
// pasted into the header is sent as a bearer token. Errors keep the server's code and message.
const data = document.body.dataset

export const config = {
  apiBase: data.apiBase ?? '',
  basePath: data.basePath ?? '',
  title: data.title ?? 'Skein debugger',
}

let capabilitiesOnce
/**
 * What the host serves (`{ cancel, operations }`, `<basePath>/capabilities.json`), read once
 * per page; `{}` when it cannot be read.
 */
export const capabilities = () =>
  (capabilitiesOnce ??= fetch(`${config.basePath}/capabilities.json`, {
    credentials: 'same-origin',
  })
    .then((r) => (r.ok ? r.json() : {}))
    .catch(() => ({})))

const TOKEN_KEY = 'skein.debugger.token'

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) ?? '',
  set(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value)
    else sessionStorage.removeItem(TOKEN_KEY)
  },
}

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message)
    this.status = status
    this.code = code
    this.details = details
  }
}

export const enc = encodeURIComponent

export function authHeaders(extra = {}) {
  const headers = { ...extra }
  const bearer = token.get()
  if (bearer) headers.authorization = `Bearer ${bearer}`
  return headers
}

/** One JSON call; rejects with ApiError (status 0 when the server cannot be reached). */
export async function api(path, { method = 'GET', body, signal } = {}) {
  let response
  try {
    response = await fetch(config.apiBase + path, {
      method,
      headers: authHeaders(body === undefined ? {} : { 'content-type': 'application/json' }),
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      signal,
    })
  } catch (error) {
    if (error?.name === 'AbortError') throw error
    throw new ApiError(0, 'NETWORK', `cannot reach the server (${error?.message ?? error})`)
  }
  const text = await response.text()
  let json = null
  try {
    json = text ? JSON.parse(text) : null
  } catch {}
  if (!response.ok) {
    const error = json?.error
    throw new ApiError(
      response.status,
      error?.code ?? `HTTP_${response.status}`,
      error?.message ?? (response.statusText || 'request failed'),
      error?.details,
    )
  }
  if (json === null) throw new ApiError(response.status, 'BAD_RESPONSE', 'the answer is not JSON')
  return json
}

/** "CODE: message (HTTP n)" for people. */
export const describe = (error) =>
  error instanceof ApiError
    ? `${error.code}: ${error.message}${error.status ? ` (HTTP ${error.status})` : ''}`
    : String(error?.message ?? error)
