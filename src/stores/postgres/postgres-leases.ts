import { LeaseLostError } from '../../core/errors.js'
import type { Lease, LeaseStore } from '../../core/ports.js'
import { checkClaim, toLease } from '../shared/lease-rule.js'
import { type LeaseRow, rowLease } from './group-commit.js'
import type { Statements } from './statements.js'

type Read = (action: string, text: string, params: unknown[]) => Promise<any[]>

/**
 * Run leases on the runs table (migration 3): each call one statement, atomic across hosts;
 * appends carry their claim through `skein_append` instead. The rule is `decideClaim`'s
 * (core/claim-rule.ts), restated in the statements (statements.ts).
 */
export function postgresLeases(
  sql: Pick<Statements, 'readLease' | 'renewLease' | 'releaseLease' | 'claimDue' | 'markDue'>,
  read: Read,
): LeaseStore {
  const leaseOf = (runId: string, row: LeaseRow | undefined): Lease | null => {
    const held = row ? rowLease(row) : null
    return held ? toLease(runId, held) : null
  }
  return {
    shared: true,
    readLease: async (runId) => {
      const [row] = await read(`read lease of ${runId}`, sql.readLease, [runId])
      return leaseOf(runId, row)
    },
    renewLease: async (runId, claim) => {
      const { owner, epoch, expiresAt, now } = claim
      const params = [runId, owner, epoch, expiresAt, now]
      const rows = await read(`renew lease of ${runId}`, sql.renewLease, params)
      if (rows.length > 0) return { runId, owner, epoch, expiresAt }
      // Refused: the stored lease says why (checkClaim throws LeaseLostError with it).
      const [row] = await read(`read lease of ${runId}`, sql.readLease, [runId])
      checkClaim(runId, leaseOf(runId, row), claim)
      // It changed hands again since: refused all the same.
      throw new LeaseLostError(`run ${runId}: the claim of ${owner} at epoch ${epoch} is refused`, {
        runId,
        owner,
        epoch,
      })
    },
    releaseLease: async (runId, owner, epoch) => {
      await read(`release lease of ${runId}`, sql.releaseLease, [runId, owner, epoch])
    },
    claimDue: async (owner, now, expiresAt, limit, only) => {
      const versions = only
        ? [
            only.map((v) => v.kind),
            only.map((v) => v.definitionName),
            only.map((v) => v.definitionVersion),
          ]
        : [null, null, null]
      const params = [owner, now, expiresAt, limit, ...versions]
      return (await read('claim due runs', sql.claimDue, params)).map((r) => ({
        runId: r.run_id,
        epoch: Number(r.lease_epoch),
        nextDeadlineAt: Number(r.next_deadline_at),
      }))
    },
    markDue: async (runId, at) => {
      await read(`mark ${runId} due`, sql.markDue, [runId, at])
    },
  }
}
