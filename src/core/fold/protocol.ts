import { UnsupportedProtocolError } from '../errors.js'

/**
 * The log protocol version this Skein writes, and the newest it reads. A run records it in
 * `runtime.run.started` (`protocolVersion`) and every snapshot of the run carries it (the fold's
 * `protocol`). A log without it is version 1: the format of every log written before the
 * version existed. How a log folds is decided by its recorded version (decisions.md, "The log protocol version"), never by
 * the version of the code that happens to read it; a change to how events fold that old logs
 * must not see raises this number and keeps the old behaviour for logs recorded below it.
 */
export const LOG_PROTOCOL_VERSION = 1

/**
 * The protocol version a run was recorded with (`undefined`: a log from before the version,
 * so 1). Throws UnsupportedProtocolError for a version this code does not read: folding it by
 * guesswork could corrupt the run.
 */
export function readableProtocol(runId: string, recorded: unknown, where: string): number {
  const version = recorded ?? 1
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new UnsupportedProtocolError(
      `run ${runId}: ${where} records log protocol version ${JSON.stringify(version)}, which is not a version; the log or snapshot was not written by Skein`,
      { runId, protocolVersion: String(version), supported: LOG_PROTOCOL_VERSION },
    )
  }
  if (version > LOG_PROTOCOL_VERSION) {
    throw new UnsupportedProtocolError(
      `run ${runId}: ${where} was recorded with log protocol version ${version}, but this Skein reads versions up to ${LOG_PROTOCOL_VERSION}. Upgrade every process that uses this store to a Skein that reads protocol ${version}; nothing was written`,
      { runId, protocolVersion: version, supported: LOG_PROTOCOL_VERSION },
    )
  }
  return version
}
