// Preact through htm tagged templates: components without a build step.
import htm from 'htm'
import { h } from 'preact'

export const html = htm.bind(h)
