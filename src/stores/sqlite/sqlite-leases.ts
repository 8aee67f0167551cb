import type { DefinitionVersionKey, LeaseStore } from '../../core/ports.js'
import { checkClaim, toLease } from '../shared/lease-rule.js'
import type { SqliteDatabase } from './driver.js'
import { storedLease } from './group-commit.js'
import { newRunParams, type Statements } from './statements.js'
import { unsyncedWrite } from './unsynced-write.js'

const versionTriple = (v: DefinitionVersionKey) => [v.kind, v.definitionName, v.definitionVersion]

/**
 * Leases kept on the runs table (schema v4). Each call is one IMMEDIATE transaction, so the
 * check and the write are atomic across every connection to the file; appends carry their
 * claim through the group commit instead (no transaction of their own). `forget` tells the
 * group commit a row it may have cached changed under this connection.
 *
 * With `relaxed` (a FULL-sync WAL file) a release commits under `synchronous = NORMAL`: its WAL
 * frames are written but not fsynced, and the next FULL commit covers them. A release lost to a
 * crash only leaves the lease to expire by itself, as a failed release does (decisions.md,
 * "A lease release and a group's worker tasks cost no fsync of their own").
 */
export function sqliteLeases(
  db: SqliteDatabase,
  st: Statements,
  guarded: <T>(action: string, fn: () => T) => Promise<T>,
  forget: (runId: string) => void,
  relaxed: boolean,
): LeaseStore {
  const renewTx = db.transaction(
    (runId: string, claim: Parameters<LeaseStore['renewLease']>[1]) => {
      const row = st.run.get(runId)
      checkClaim(runId, storedLease(row), claim)
      // A take-over before the run's first append makes its row (tail 0: not listed yet).
      const runNo = row
        ? row.run_no
        : Number(st.insertRun.run(...newRunParams(runId, 0, undefined)).lastInsertRowid)
      st.setLease.run(claim.owner, claim.epoch, claim.expiresAt, runNo)
      return toLease(runId, { owner: claim.owner, epoch: claim.epoch, expiresAt: claim.expiresAt })
    },
  )
  const claimTx = db.transaction(
    (owner: string, now: number, expiresAt: number, limit: number, only: string | undefined) =>
      (only === undefined
        ? st.dueUnleased.all(now, now, limit)
        : st.dueUnleasedOf.all(now, now, only, limit)
      ).map((due) => {
        const epoch = due.lease_epoch + 1
        st.setLease.run(owner, epoch, expiresAt, due.run_no)
        return { runId: due.run_id, epoch, nextDeadlineAt: due.next_deadline_at }
      }),
  )
  return {
    shared: true,
    readLease: (runId) =>
      guarded(`read lease of ${runId}`, () => {
        const stored = storedLease(st.run.get(runId))
        return stored ? toLease(runId, stored) : null
      }),
    renewLease: (runId, claim) =>
      guarded(`renew lease of ${runId}`, () => {
        forget(runId)
        return renewTx.immediate(runId, claim)
      }),
    releaseLease: (runId, owner, epoch) =>
      guarded(`release lease of ${runId}`, () => {
        forget(runId)
        unsyncedWrite(db, relaxed, () => st.releaseLease.run(runId, owner, epoch))
      }),
    claimDue: (owner, now, expiresAt, limit, only) =>
      guarded('claim due runs', () => {
        const versions = only && JSON.stringify(only.map(versionTriple))
        const claimed = claimTx.immediate(owner, now, expiresAt, Math.max(0, limit), versions)
        for (const { runId } of claimed) forget(runId)
        return claimed
      }),
    markDue: (runId, at) =>
      guarded(`mark ${runId} due`, () => {
        forget(runId)
        st.markDue.run(at, runId, at)
      }),
  }
}
