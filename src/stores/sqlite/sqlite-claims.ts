import type { Claim, ClaimStore } from '../../core/ports.js'
import type { SqliteDatabase } from './driver.js'
import { lazyStatements } from './statements.js'

interface ClaimRow {
  name: string
  owner: string
  epoch: number
  expires_at: number
}

const toClaim = (row: ClaimRow): Claim => ({
  name: row.name,
  owner: row.owner,
  epoch: row.epoch,
  expiresAt: row.expires_at,
})

/**
 * Named claims in `skein_claims` (schema v6). Each call is one statement, atomic against every
 * other connection to the file.
 */
export function sqliteClaims(
  db: SqliteDatabase,
  call: <T>(action: string, fn: () => T) => Promise<T>,
): ClaimStore {
  const st = lazyStatements(db, (lazy) => ({
    // `decideClaim` (core/claim-rule.ts) restated, with the epoch `claimEpochFor` asks for: the
    // holder keeps its epoch unless it let go (expires_at 0), anyone else takes the next; granted
    // when the holder asks, or the claim is free. `describeClaimStore` holds it to the rule's
    // cases. SET expressions read the row as it was, so the epoch sees the old owner.
    claim: lazy.prepare<
      [{ name: string; owner: string; now: number; expiresAt: number }],
      ClaimRow
    >(
      `INSERT INTO skein_claims (name, owner, epoch, expires_at) VALUES (@name, @owner, 1, @expiresAt)
        ON CONFLICT (name) DO UPDATE SET
          epoch = CASE WHEN owner = excluded.owner AND expires_at > 0 THEN epoch ELSE epoch + 1 END,
          owner = excluded.owner, expires_at = excluded.expires_at
        WHERE (owner = excluded.owner AND expires_at > 0) OR expires_at <= @now
        RETURNING name, owner, epoch, expires_at`,
    ),
    release: lazy.prepare<[string, string, number]>(
      'UPDATE skein_claims SET expires_at = 0 WHERE name = ? AND owner = ? AND epoch = ?',
    ),
    read: lazy.prepare<[string], ClaimRow>(
      'SELECT name, owner, epoch, expires_at FROM skein_claims WHERE name = ?',
    ),
    list: lazy.prepare<[string], ClaimRow>(
      `SELECT name, owner, epoch, expires_at FROM skein_claims WHERE instr(name, ?) = 1
        ORDER BY name`,
    ),
  }))
  return {
    shared: true,
    claim: (name, owner, now, expiresAt) =>
      call(`claim ${name}`, () => {
        const row = st.claim.get({ name, owner, now, expiresAt })
        return row ? toClaim(row) : null
      }),
    release: (name, owner, epoch) =>
      call(`release ${name}`, () => {
        st.release.run(name, owner, epoch)
      }),
    read: (name) =>
      call(`read claim ${name}`, () => {
        const row = st.read.get(name)
        return row ? toClaim(row) : null
      }),
    list: (prefix) => call(`list claims ${prefix}*`, () => st.list.all(prefix).map(toClaim)),
  }
}
