// The event timeline: a virtual list over seqs head..tail. Only the rows in view are in the DOM,
// and only the pages under them are fetched (`GET /runs/:id/events?fromSeq=&limit=`), so a
// 100,000-event run opens and scrolls without reading its whole log. Live events join the end.
import { useEffect, useRef, useState } from 'preact/hooks'
import { api, describe, enc } from './api.js'
import { brief, time } from './format.js'
import { html } from './html.js'

const ROW = 28
const PAGE = 200
const OVERSCAN = 10

/**
 * `live` is the newest batch of events from the stream; `tail` the last seq known. Selecting a
 * row (click, Enter) calls `onSelect(seq)`.
 */
export function Timeline({ runId, head, tail, live, selected, onSelect }) {
  const box = useRef(null)
  const events = useRef(new Map())
  const pages = useRef(new Map())
  const [, setVersion] = useState(0)
  const [scrollTop, setScrollTop] = useState(0)
  const [height, setHeight] = useState(420)
  const [follow, setFollow] = useState(true)
  const count = Math.max(0, tail - head + 1)

  useEffect(() => {
    for (const event of live ?? []) events.current.set(event.seq, event)
    setVersion((v) => v + 1)
  }, [live])

  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = count * ROW
  }, [count, follow])

  useEffect(() => {
    if (box.current) setHeight(box.current.clientHeight || 420)
  }, [])

  const first = Math.max(0, Math.floor(scrollTop / ROW) - OVERSCAN)
  const last = Math.min(count - 1, Math.ceil((scrollTop + height) / ROW) + OVERSCAN)

  // Fetch the pages under the rows in view that are neither loaded nor loading.
  useEffect(() => {
    if (count === 0) return
    for (let p = Math.floor(first / PAGE); p <= Math.floor(last / PAGE); p++) {
      if (pages.current.has(p)) continue
      const fromSeq = head + p * PAGE
      const seqs = Array.from({ length: Math.min(PAGE, tail - fromSeq + 1) }, (_, i) => fromSeq + i)
      if (seqs.every((s) => events.current.has(s))) continue
      pages.current.set(p, 'loading')
      api(`/runs/${enc(runId)}/events?fromSeq=${fromSeq}&limit=${PAGE}`)
        .then((answer) => {
          for (const event of answer.events) events.current.set(event.seq, event)
          pages.current.set(p, answer.events.length === PAGE ? 'full' : 'partial')
        })
        .catch((error) => pages.current.set(p, error))
        .finally(() => setVersion((v) => v + 1))
    }
  }, [first, last, head, tail, runId, count])

  // A partial page (the tail when it was read) is read again once more events exist.
  useEffect(() => {
    for (const [p, state] of pages.current) if (state === 'partial') pages.current.delete(p)
  }, [tail])

  const rows = []
  for (let i = first; i <= last; i++) {
    const seq = head + i
    const event = events.current.get(seq)
    const pageState = pages.current.get(Math.floor(i / PAGE))
    rows.push(html`<button type="button" key=${seq} role="option" aria-selected=${selected === seq}
      class=${`event-row${selected === seq ? ' selected' : ''}`} data-seq=${seq}
      style=${{ top: `${i * ROW}px` }} onClick=${() => onSelect(seq)}>
      <span class="seq">${seq}</span>
      ${
        event
          ? html`<span class="ts">${time(event.ts)}</span>
              <span class="type">${event.type}</span>
              <span class="thread">${event.threadId ?? ''}</span>
              <span class="payload">${brief(event.payload)}</span>`
          : pageState instanceof Error
            ? html`<span class="error">${describe(pageState)}</span>`
            : html`<span class="loading">loading…</span>`
      }
    </button>`)
  }

  return html`<section class="timeline" aria-labelledby="timeline-title">
    <div class="section-head">
      <h2 id="timeline-title">Events <small>(${count.toLocaleString('en')})</small></h2>
      <label class="follow"><input type="checkbox" checked=${follow}
        onChange=${(e) => setFollow(e.currentTarget.checked)} /> Follow new events</label>
    </div>
    <div class="event-list" ref=${box} role="listbox" aria-label="Events of the run" tabindex="0"
      onScroll=${(e) => {
        setScrollTop(e.currentTarget.scrollTop)
        const atEnd = e.currentTarget.scrollTop + e.currentTarget.clientHeight >= count * ROW - ROW
        if (!atEnd && follow) setFollow(false)
      }}>
      <div class="event-spacer" style=${{ height: `${count * ROW}px` }}>${rows}</div>
    </div>
  </section>`
}
