// A workflow's DAG as SVG: columns by longest path from the roots (declaration order within a
// column), each node coloured by its state. Pending nodes are those the log has not started.
import { html } from './html.js'

const W = 150
const H = 44
const GAP_X = 56
const GAP_Y = 18

/** Column of every node: 0 for roots, else one more than its deepest predecessor. */
function layers(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, n]))
  const depth = new Map()
  const visit = (id, seen = new Set()) => {
    if (depth.has(id)) return depth.get(id)
    if (seen.has(id)) return 0
    seen.add(id)
    const after = byId.get(id)?.after ?? []
    const d = after.length === 0 ? 0 : 1 + Math.max(...after.map((a) => visit(a, seen)))
    depth.set(id, d)
    return d
  }
  for (const n of nodes) visit(n.id)
  return depth
}

export function layoutDag(nodes) {
  const depth = layers(nodes)
  const rows = new Map()
  const place = new Map()
  for (const n of nodes) {
    const col = depth.get(n.id)
    const row = rows.get(col) ?? 0
    rows.set(col, row + 1)
    place.set(n.id, { x: 8 + col * (W + GAP_X), y: 8 + row * (H + GAP_Y) })
  }
  const width = 16 + (Math.max(0, ...depth.values()) + 1) * (W + GAP_X) - GAP_X
  const height = 16 + Math.max(1, ...rows.values()) * (H + GAP_Y) - GAP_Y
  return { place, width, height }
}

/** A fan-out node's items: `map 3/10 · 1 failed`. */
const itemsText = (items) =>
  items ? ` ${items.done}/${items.total}${items.failed ? ` · ${items.failed} failed` : ''}` : ''

/**
 * `nodes`: [{ id, after }]; `states`: { [nodeId]: { status, directive?, items? } } (absent:
 * pending). A fan-out is one node that counts its items.
 */
export function Dag({ nodes, states, label }) {
  const { place, width, height } = layoutDag(nodes)
  const stateOf = (id) => states?.[id]?.status ?? 'pending'
  const summary = nodes.map((n) => `${n.id}: ${stateOf(n.id)}`).join(', ')
  return html`<figure class="dag">
    <svg width=${width} height=${height} viewBox=${`0 0 ${width} ${height}`} role="img"
      aria-label=${`${label}. ${summary}`}>
      <defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" class="arrow" /></marker></defs>
      ${nodes.flatMap((n) =>
        n.after.map((from) => {
          const a = place.get(from)
          const b = place.get(n.id)
          if (!a || !b) return null
          const x1 = a.x + W
          const y1 = a.y + H / 2
          const x2 = b.x
          const y2 = b.y + H / 2
          const mid = (x1 + x2) / 2
          return html`<path class="edge" marker-end="url(#arrow)"
            d=${`M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`} />`
        }),
      )}
      ${nodes.map((n) => {
        const p = place.get(n.id)
        const status = stateOf(n.id)
        const directive = states?.[n.id]?.directive
        const items = states?.[n.id]?.items
        return html`<g class=${`node node-${status}`} data-node=${n.id} data-status=${status}
          data-items=${items ? `${items.done}/${items.total}` : undefined}
          transform=${`translate(${p.x},${p.y})`}>
          <title>${n.id}: ${status}${directive ? ` (${directive}${itemsText(items)})` : ''}</title>
          <rect width=${W} height=${H} rx="8" />
          <text x="10" y="18" class="node-id">${n.id.length > 18 ? `${n.id.slice(0, 17)}…` : n.id}</text>
          <text x="10" y="35" class="node-state">${status}${directive ? ` · ${directive}${itemsText(items)}` : ''}${n.conditional ? ' · when' : ''}</text>
        </g>`
      })}
    </svg>
    <figcaption>${label}</figcaption>
  </figure>`
}
