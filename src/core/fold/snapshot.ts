import type { Snapshot } from '../ports.js'
import { readableProtocol } from './protocol.js'
import { cloneFold, type RunFold } from './run-fold.js'

/**
 * The fold format snapshots are written in. 2 added the per-thread command archive
 * (`archived`, `fresh`); format-1 snapshots are still read (they have no archive), while an
 * older skein ignores format-2 ones and refolds from the log. Independent of the log protocol
 * version, which the fold inside carries (`protocol`).
 */
export const SNAPSHOT_FORMAT = 2

export const isReadableSnapshot = (snapshot: Snapshot | null | undefined): snapshot is Snapshot =>
  snapshot?.format === SNAPSHOT_FORMAT || snapshot?.format === 1

/**
 * The fold inside a snapshot, shared (the caller must not mutate it), or `null` when this
 * version cannot read the snapshot's format (the caller then folds the log instead). Throws
 * UnsupportedProtocolError for a run recorded with a newer log protocol.
 */
export function snapshotFold(snapshot: Snapshot | null | undefined): RunFold | null {
  if (!isReadableSnapshot(snapshot)) return null
  const fold = snapshot.data as unknown as RunFold
  readableProtocol(snapshot.runId, fold.protocol, `its snapshot at seq ${snapshot.seq}`)
  return fold
}

/** A private, writable copy of a snapshot's fold (see `snapshotFold`). */
export function foldFromSnapshot(snapshot: Snapshot | null | undefined): RunFold | null {
  const fold = snapshotFold(snapshot)
  return fold && cloneFold(fold)
}
