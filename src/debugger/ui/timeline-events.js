// The run's events of the types the timeline draws (`GET /runs/:id/events?types=`), at most
// MAX_EVENTS of them, read again from where the last read stopped as the run grows. The run
// page shares them: the timeline, the node results and the run's input come from them.
import { useEffect, useRef, useState } from 'preact/hooks'
import { api, enc } from './api.js'
import { TIMELINE_TYPES } from './timeline-spans.js'

const PAGE = 500
export const MAX_EVENTS = 10_000

/** The timeline's events, read page by page and then again from the last one as `tail` grows. */
export function useTimelineEvents(runId, tail) {
  const [state, setState] = useState({ events: [], error: null, capped: false, loaded: false })
  const read = useRef({ events: [], scanned: 0, busy: false, again: false, mounted: true })
  useEffect(() => {
    const current = read.current
    current.mounted = true
    return () => {
      current.mounted = false
    }
  }, [])
  useEffect(() => {
    const current = read.current
    // One read at a time; a tail that moves meanwhile asks for one more read after it.
    const pull = async () => {
      if (current.busy) {
        current.again = true
        return
      }
      current.busy = true
      try {
        // A short page means the server read the log to its end: at least to the tail known
        // before the read, so the next read starts after it, not after the last match.
        const knownTail = tail
        while (current.events.length < MAX_EVENTS) {
          const from = Math.max(current.events.at(-1)?.seq ?? 0, current.scanned) + 1
          const answer = await api(
            `/runs/${enc(runId)}/events?types=${TIMELINE_TYPES}&fromSeq=${from}&limit=${PAGE}`,
          )
          current.events.push(...answer.events)
          if (answer.events.length < PAGE) {
            current.scanned = Math.max(current.scanned, knownTail)
            break
          }
        }
        const capped = current.events.length >= MAX_EVENTS
        if (current.mounted) {
          setState({ events: current.events.slice(), error: null, capped, loaded: true })
        }
      } catch (error) {
        if (current.mounted) setState((s) => ({ ...s, error, loaded: true }))
      } finally {
        current.busy = false
        if (current.again && current.mounted) {
          current.again = false
          pull()
        }
      }
    }
    pull()
  }, [runId, tail])
  return state
}
