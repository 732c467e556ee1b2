import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

/**
 * Syntax highlighting for the diff viewer: highlight.js's core with the
 * languages agents most often edit, registered by hand so the bundle holds
 * a dozen grammars, not 190. A file whose extension is not listed is shown
 * plain.
 */
const LANGUAGES = { bash, css, go, ini, javascript, json, markdown, python, rust, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

type Language = keyof typeof LANGUAGES;

const BY_EXTENSION: Record<string, Language> = {
  sh: 'bash',
  bash: 'bash',
  zsh: 'bash',
  css: 'css',
  go: 'go',
  toml: 'ini',
  ini: 'ini',
  cfg: 'ini',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'javascript',
  json: 'json',
  md: 'markdown',
  markdown: 'markdown',
  py: 'python',
  rs: 'rust',
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  html: 'xml',
  htm: 'xml',
  xml: 'xml',
  svg: 'xml',
  yaml: 'yaml',
  yml: 'yaml',
};

/** The language of a path, by its extension; null when it is not one of ours. */
export function languageOf(path: string): Language | null {
  const name = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
  const dot = name.lastIndexOf('.');
  if (dot < 0) return name === 'dockerfile' || name === 'makefile' ? 'bash' : null;
  return BY_EXTENSION[name.slice(dot + 1)] ?? null;
}

/**
 * One line as highlighted HTML (highlight.js escapes the text), or null
 * when there is no language. Lines are highlighted one at a time, as the
 * viewer renders them, so a construct spanning lines (a block comment)
 * shows only where its own line shows it: the price of highlighting only
 * what is in view.
 */
export function highlightLine(text: string, language: Language | null): string | null {
  if (!language || text === '') return null;
  return hljs.highlight(text, { language, ignoreIllegals: true }).value;
}

/** What the diff viewer loads lazily. */
export interface Highlighter {
  languageOf: typeof languageOf;
  line: typeof highlightLine;
}

export const highlighter: Highlighter = { languageOf, line: highlightLine };
