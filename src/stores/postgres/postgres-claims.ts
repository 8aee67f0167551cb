import type { Claim, ClaimStore } from '../../core/ports.js'

type Read = (action: string, text: string, params: unknown[]) => Promise<any[]>

const toClaim = (row: any): Claim => ({
  name: row.name,
  owner: row.owner,
  epoch: Number(row.epoch),
  expiresAt: Number(row.expires_at),
})

const COLUMNS = 'name, owner, epoch, expires_at'

/**
 * Named claims in `skein_claims` (migration 6). Each call is one statement: the upsert locks
 * the row, so two hosts claiming one name are decided one after the other.
 */
export function postgresClaims(s: string, read: Read): ClaimStore {
  const sql = {
    // `decideClaim` (core/claim-rule.ts) restated, with the epoch `claimEpochFor` asks for: the
    // holder keeps its epoch unless it let go (expires_at 0), anyone else takes the next;
    // granted when the holder asks, or the claim is free. `describeClaimStore` holds it to the
    // rule's cases. SET expressions read the row as it was, so the epoch sees the old owner.
    claim: `INSERT INTO ${s}.skein_claims AS c (name, owner, epoch, expires_at)
        VALUES ($1, $2, 1, $4::bigint)
      ON CONFLICT (name) DO UPDATE SET
        epoch = CASE WHEN c.owner = $2 AND c.expires_at > 0 THEN c.epoch ELSE c.epoch + 1 END,
        owner = $2, expires_at = $4::bigint
      WHERE (c.owner = $2 AND c.expires_at > 0) OR c.expires_at <= $3::bigint
      RETURNING ${COLUMNS}`,
    release: `UPDATE ${s}.skein_claims SET expires_at = 0
      WHERE name = $1 AND owner = $2 AND epoch = $3::bigint`,
    read: `SELECT ${COLUMNS} FROM ${s}.skein_claims WHERE name = $1`,
    list: `SELECT ${COLUMNS} FROM ${s}.skein_claims WHERE starts_with(name, $1)
      ORDER BY name COLLATE "C"`,
  }
  return {
    shared: true,
    async claim(name, owner, now, expiresAt) {
      const [row] = await read(`claim ${name}`, sql.claim, [name, owner, now, expiresAt])
      return row ? toClaim(row) : null
    },
    async release(name, owner, epoch) {
      await read(`release ${name}`, sql.release, [name, owner, epoch])
    },
    async read(name) {
      const [row] = await read(`read claim ${name}`, sql.read, [name])
      return row ? toClaim(row) : null
    },
    async list(prefix) {
      return (await read(`list claims ${prefix}*`, sql.list, [prefix])).map(toClaim)
    },
  }
}
