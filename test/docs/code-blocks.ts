import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** A fenced code block of a Markdown file. */
export interface CodeBlock {
  file: string
  /** 1-based line of the opening fence. */
  line: number
  /** The info string's first word (`ts`, `sh`, …; '' for a bare fence). */
  lang: string
  /** Words after the language (`fragment`). */
  flags: string[]
  code: string
}

/** The fenced blocks of one Markdown file (``` or longer, indented inside list items too). */
export function codeBlocks(file: string): CodeBlock[] {
  const lines = readFileSync(file, 'utf8').split('\n')
  const blocks: CodeBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})\s*(\S*)\s*(.*)$/.exec(lines[i] ?? '')
    if (!open) continue
    const indent = open[1] ?? ''
    const fence = open[2] ?? '```'
    const end = lines.findIndex((text, j) => j > i && text.trimStart().startsWith(fence))
    if (end < 0) throw new Error(`${file}:${i + 1}: code block never closed`)
    blocks.push({
      file,
      line: i + 1,
      lang: open[3] ?? '',
      flags: (open[4] ?? '').split(/\s+/).filter(Boolean),
      // A block inside a list item is indented: the indentation is not part of the code.
      code: lines
        .slice(i + 1, end)
        .map((text) => (text.startsWith(indent) ? text.slice(indent.length) : text))
        .join('\n'),
    })
    i = end
  }
  return blocks
}

/** README.md and every docs/*.md, in a stable order. */
export function documentationFiles(root = '.'): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join('docs', name))
  return ['README.md', ...docs]
}

/** A ```ts block is a complete program; ```ts fragment marks an excerpt. */
export const isTypeScript = (block: CodeBlock): boolean =>
  block.lang === 'ts' || block.lang === 'typescript'
export const isProgram = (block: CodeBlock): boolean =>
  isTypeScript(block) && !block.flags.includes('fragment')
