// The run on a time axis: the run, its nodes, effect attempts (with retries and backoff), waits
// and child threads, each a bar as long as it took (events from timeline-events.js).
import { describe } from './api.js'
import { time } from './format.js'
import { html } from './html.js'
import { MAX_EVENTS } from './timeline-events.js'
import { buildTimeline, duration } from './timeline-spans.js'

const TICKS = 5

/** Where a bar starts on the track; one that starts at the very end stays visible (2 px wide). */
const left = (value, start, span) => `min(${((value - start) / span) * 100}%, calc(100% - 2px))`

function Bar({ segment, start, span }) {
  const took = segment.to - segment.from
  const text = `${segment.label}: ${duration(took)} (${time(segment.from)} → ${time(segment.to)})`
  return html`<span class=${`span-bar status-${segment.status}`} title=${text}
    data-status=${segment.status} data-duration-ms=${Math.round(took)}
    style=${{ left: left(segment.from, start, span), width: `${(took / span) * 100}%` }}>
    <span class="visually-hidden">${text}</span>
  </span>`
}

function Row({ row, start, span }) {
  const took = row.to - row.from
  const attempts =
    row.kind === 'effect' && row.attempts > 0
      ? ` · ${row.attempts} attempt${row.attempts === 1 ? '' : 's'}`
      : ''
  const indent = row.kind === 'run' ? 0 : row.depth + 1
  return html`<li class=${`span-row kind-${row.kind}`} data-row-kind=${row.kind} data-row-id=${row.id}
    data-status=${row.status}>
    <span class="span-label" style=${{ paddingLeft: `${indent * 14}px` }} title=${row.detail ?? ''}>
      <span class="span-name">${row.label}</span>${attempts}
      <span class="span-took">${duration(took)}${row.open ? ' so far' : ''}</span>
    </span>
    <span class="span-track">${row.segments.map(
      (segment, i) => html`<${Bar} key=${i} segment=${segment} start=${start} span=${span} />`,
    )}</span>
  </li>`
}

/** `read`: useTimelineEvents' answer; `state`: the run (its updatedAt ends open spans). */
export function RunTimeline({ read, state }) {
  const { events, error, capped, loaded } = read
  const finished = ['completed', 'failed', 'cancelled'].includes(state.status)
  const lastTs = events.at(-1)?.ts ?? state.updatedAt
  const now = finished ? Math.max(lastTs, state.updatedAt) : Math.max(lastTs, Date.now())
  const { start, end, rows } = buildTimeline(events, now, time)
  const span = Math.max(1, end - start)
  return html`<section class="run-timeline" aria-labelledby="run-timeline-title">
    <h2 id="run-timeline-title">Timeline <small>(${duration(end - start)})</small></h2>
    ${error && html`<p class="error" role="alert">Could not read the timeline: ${describe(error)}</p>`}
    ${!loaded && html`<p aria-busy="true">Reading the run's events…</p>`}
    ${capped && html`<p class="note">Only the first ${MAX_EVENTS.toLocaleString('en')} timeline events are drawn.</p>`}
    ${
      loaded &&
      rows.length > 0 &&
      html`<div class="span-axis" aria-hidden="true">${Array.from({ length: TICKS }, (_, i) => {
        const at = (span * i) / (TICKS - 1)
        return html`<span class="tick" style=${{ left: `${(i / (TICKS - 1)) * 100}%` }}>+${duration(at)}</span>`
      })}</div>
      <ol class="span-rows" aria-label="Where the run spent its time">${rows.map(
        (row) => html`<${Row} key=${row.id} row=${row} start=${start} span=${span} />`,
      )}</ol>`
    }
  </section>`
}
