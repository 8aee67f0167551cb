import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

// The index at the top of docs/decisions.md lists every entry once, under its area, linked to
// its heading. A new entry is appended at the end of the file and added to the index by hand.

const text = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'decisions.md'), 'utf8')

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-')

function anchors(headings: string[]): Map<string, string> {
  const seen = new Map<string, number>()
  const out = new Map<string, string>()
  for (const heading of headings) {
    const base = slug(heading)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.set(heading, n === 0 ? base : `${base}-${n}`)
  }
  return out
}

describe('the decisions index', () => {
  const headings = text
    .split('\n')
    .filter((line) => line.startsWith('### '))
    .map((line) => line.slice(4))
  const start = text.indexOf('\n## Index by area\n')
  const index = text.slice(start, text.indexOf('\n### '))
  const links = [...index.matchAll(/^- \[(.+)\]\(#([^)]+)\)$/gm)].map((m) => ({
    heading: (m[1] as string).replace(/\\([[\]])/g, '$1'),
    anchor: m[2] as string,
  }))

  it('lists every entry once, under an area, before the first entry', () => {
    expect(start).toBeGreaterThan(0)
    expect(headings.length).toBeGreaterThan(100)
    const listed = links.map((link) => link.heading)
    const missing = headings.filter((heading) => !listed.includes(heading))
    expect(
      missing,
      'add each new decisions.md entry to the index at the top of the file, under its area',
    ).toEqual([])
    expect(listed.filter((heading) => !headings.includes(heading))).toEqual([])
    expect(listed.length).toBe(new Set(listed).size)
  })

  it("links each entry to its heading's anchor", () => {
    const byHeading = anchors(headings)
    for (const link of links) expect(link.anchor).toBe(byHeading.get(link.heading))
  })
})
