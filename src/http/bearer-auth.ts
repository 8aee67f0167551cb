import { createHash, timingSafeEqual } from 'node:crypto'
import type { Access, AuthorizeHook } from './authorize.js'
import { notConfigured } from './authorize.js'
import { errorResponse, httpError } from './error-response.js'

export interface BearerTokens {
  read?: string
  write?: string
  worker?: string
  operations?: string
}

/**
 * Which configured tokens satisfy each access level. A stronger token also opens weaker
 * levels (operations ⊇ write ⊇ read) so one client credential can read what it writes;
 * worker tokens open only worker callbacks.
 */
const ACCEPTS: Record<Access, readonly Access[]> = {
  read: ['read', 'write', 'operations'],
  write: ['write', 'operations'],
  operations: ['operations'],
  worker: ['worker'],
  capability: [],
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest()

/**
 * An `authorize` hook that requires `Authorization: Bearer <token>` on every level that has
 * a token. A level without one keeps the default: reads and writes open, worker and
 * operations routes 503 NOT_CONFIGURED. Allowed requests carry `{ identity: { token: level } }`.
 *
 * @example
 * createEngine({ authorize: bearerAuth({ write: process.env.SKEIN_WRITE_TOKEN, operations: opsToken }) })
 */
export function bearerAuth(tokens: BearerTokens): AuthorizeHook {
  const digests = new Map<Access, Buffer>()
  for (const level of ['read', 'write', 'worker', 'operations'] as const) {
    const token = tokens[level]
    if (token === undefined) continue
    if (typeof token !== 'string' || token.length === 0) {
      throw new TypeError(`bearerAuth: the ${level} token must be a non-empty string`)
    }
    digests.set(level, digest(token))
  }

  return (request, context) => {
    if (context.access === 'capability') return true
    if (!digests.has(context.access)) {
      // No token for this level: the default policy.
      if (context.access === 'worker' || context.access === 'operations') {
        return notConfigured(context)
      }
      return true
    }
    const accepted = ACCEPTS[context.access].filter((level) => digests.has(level))
    const header = request.headers.get('authorization') ?? ''
    const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header)
    if (match) {
      // Hash both sides so the comparison is constant-time and length-independent; compare
      // against every accepted digest without an early exit.
      const given = digest(match[1])
      let level: Access | undefined
      for (const candidate of accepted) {
        if (timingSafeEqual(given, digests.get(candidate)!) && level === undefined)
          level = candidate
      }
      if (level !== undefined) return { identity: { token: level } }
    }
    return errorResponse(
      httpError(
        'UNAUTHORIZED',
        match ? 'bearer token is not valid for this route' : 'a bearer token is required',
      ),
      {
        'www-authenticate': match
          ? 'Bearer realm="skein", error="invalid_token"'
          : 'Bearer realm="skein"',
      },
    )
  }
}
