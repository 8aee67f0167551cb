import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

// Comments and docs cite what the repository ships: a docs page, a docs/decisions.md heading,
// a file. Never the planning documents outside it, their section numbers, or tracker issue
// numbers a reader of the package cannot open.

const root = join(import.meta.dirname, '..', '..')
const scanned = ['src', 'docs', 'README.md']
const forbidden: [RegExp, string][] = [
  [/\bDESIGN\b/, 'a DESIGN section'],
  [/\bSPEC\b/, 'a SPEC section'],
  [/\bSTYLE\b/, 'a STYLE rule'],
  [/\bissues? #?\d+/i, 'an issue number'],
  [/§/, 'a section number'],
  [/\.\.\/shared\/[A-Z]|\/work\//, 'a path outside the repository'],
]

function filesUnder(path: string): string[] {
  if (path.endsWith('.md')) return [path]
  return readdirSync(join(root, path), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(ts|tsx|js|md|css|html)$/.test(entry.name))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
}

const texts = scanned.flatMap(filesUnder).map((file) => ({
  file,
  text: readFileSync(join(root, file), 'utf8'),
}))

/** Every `decisions.md` citation `"…"` in the scanned files, comment continuations joined. */
function decisionCitations(): { file: string; cited: string }[] {
  const found: { file: string; cited: string }[] = []
  for (const { file, text } of texts) {
    const joined = text.replace(/\n\s*(?:\*|\/\/|--)?\s*/g, ' ')
    for (const match of joined.matchAll(/decisions\.md[^"\n]{0,4}"([^"]+)"/g)) {
      found.push({ file, cited: match[1] as string })
    }
  }
  return found
}

describe('references inside the repository', () => {
  it('no source comment or docs page cites a document the repository does not ship', () => {
    const offenders: string[] = []
    for (const { file, text } of texts) {
      text.split('\n').forEach((line, index) => {
        for (const [pattern, what] of forbidden) {
          if (pattern.test(line))
            offenders.push(`${file}:${index + 1} cites ${what}: ${line.trim()}`)
        }
      })
    }
    expect(
      offenders,
      'cite a docs page or a docs/decisions.md heading instead (docs/decisions.md, "Comments cite what the repository ships")',
    ).toEqual([])
  })

  it('every decisions.md heading a file cites exists', () => {
    const headings = readFileSync(join(root, 'docs/decisions.md'), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('### '))
      .map((line) => line.slice(4))
    const citations = decisionCitations()
    expect(citations.length).toBeGreaterThan(5)
    const missing = citations.filter(({ cited }) => {
      const parts = cited
        .replaceAll('`', '')
        .split('…')
        .map((part) => part.trim())
      return !headings.some((heading) =>
        parts.every((part) => heading.replaceAll('`', '').includes(part)),
      )
    })
    expect(missing).toEqual([])
  })
})
