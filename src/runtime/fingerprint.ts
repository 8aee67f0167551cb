import { createHash } from 'node:crypto'
import type { Definition } from '../core/definition.js'
import { definitionLabel } from '../core/definition.js'
import { DefinitionChangedError } from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import { canonicalJson, type Json } from '../core/json.js'

/**
 * Fingerprints of definitions' shapes (`Definition.shape`), one engine's worth: 16 hex digits
 * of a SHA-256 of the shape's canonical JSON. Recorded when a thread starts; a thread whose
 * registered definition has another fingerprint is refused (DEFINITION_CHANGED).
 */
export class Fingerprints {
  private readonly known = new Map<Definition, string | null>()

  /** The fingerprint of `definition`, or undefined when it declares no shape. */
  of(definition: Definition): string | undefined {
    let fingerprint = this.known.get(definition)
    if (fingerprint === undefined) {
      fingerprint =
        definition.shape === undefined
          ? null
          : createHash('sha256').update(canonicalJson(definition.shape)).digest('hex').slice(0, 16)
      this.known.set(definition, fingerprint)
    }
    return fingerprint ?? undefined
  }

  /** A run.started / thread.started payload with `definition`'s fingerprint, if it has one. */
  stamp<P extends Record<string, Json>>(definition: Definition, payload: P): P {
    const fingerprint = this.of(definition)
    if (fingerprint !== undefined)
      (payload as Record<string, Json>).definitionFingerprint = fingerprint
    return payload
  }

  /**
   * Throws DEFINITION_CHANGED when thread `threadId` recorded a fingerprint that `definition`
   * (the registered one of the same kind, name and version) no longer has. Threads recorded
   * without one (older logs, shapeless definitions) are not checked.
   */
  check(fold: RunFold, threadId: string, definition: Definition): void {
    const recorded = fold.books[threadId]?.fingerprint
    if (recorded === undefined) return
    const current = this.of(definition)
    if (current === recorded) return
    const runId = fold.state.runId
    const label = definitionLabel(definition)
    throw new DefinitionChangedError(
      `run ${runId}: thread ${threadId} was started from ${label}, whose shape has since changed in place under the same version (recorded fingerprint ${recorded}, registered now ${current ?? 'none'}); nothing was written. To go on, register the original ${label} again; register the changed definition under a new version beside it (runs stay on the version they started with, new runs take the latest)`,
      {
        runId,
        threadId,
        kind: definition.kind,
        definitionName: definition.name,
        definitionVersion: definition.version,
        recorded,
        current: current ?? null,
      },
    )
  }
}
