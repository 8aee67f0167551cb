import { cloneFold, type RunFold } from './fold-types.js'
import type { Snapshot } from './ports.js'

/**
 * The fold format snapshots are written in. 2 added the per-thread command archive
 * (`archived`, `fresh`); format-1 snapshots are still read (they have no archive), while an
 * older skein ignores format-2 ones and refolds from the log.
 */
export const SNAPSHOT_FORMAT = 2

export const isReadableSnapshot = (snapshot: Snapshot | null | undefined): snapshot is Snapshot =>
  snapshot?.format === SNAPSHOT_FORMAT || snapshot?.format === 1

/**
 * A private, writable fold from a snapshot (which may be shared and read-only), or `null` when
 * this version cannot read the snapshot's format (the caller then folds the log instead).
 */
export function foldFromSnapshot(snapshot: Snapshot | null | undefined): RunFold | null {
  if (!isReadableSnapshot(snapshot)) return null
  return cloneFold(snapshot.data as unknown as RunFold)
}
