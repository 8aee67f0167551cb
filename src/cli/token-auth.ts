// `--token` of `skein serve` and `skein actor`: one bearer token for every access level.
import type { AuthorizeHook } from '../http/authorize.js'
import { bearerAuth } from '../http/bearer-auth.js'

/** The host options for a CLI token: none without one (every non-read route stays off). */
export function tokenAuth(token: string | undefined): { authorize?: AuthorizeHook } {
  if (!token) return {}
  return {
    authorize: bearerAuth({ read: token, write: token, worker: token, operations: token }),
  }
}
