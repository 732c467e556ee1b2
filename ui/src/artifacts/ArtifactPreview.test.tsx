// @vitest-environment happy-dom
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it } from 'vitest';

import type { ArtifactContent } from '../api';
import { ArtifactBody, prettyJson, previewKind } from './ArtifactPreview';
import { escapeHtml, renderMarkdown } from './markdown';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const content = (media: string, text: string | null, base64: string | null = null): ArtifactContent => ({
  path: 'out/x',
  size: 42,
  media,
  text,
  base64,
  truncated: false,
});

describe('renderMarkdown', () => {
  it('escapes raw HTML, so a <script> is text', () => {
    const html = renderMarkdown('# Hi <b>\n\n<script>alert(1)</script>\n\n```\n<script>x</script>\n```');
    expect(html).not.toContain('<script');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('<h1>Hi &lt;b&gt;</h1>');
    expect(html).toContain('<pre><code>&lt;script&gt;x&lt;/script&gt;</code></pre>');
  });

  it('renders headings, paragraphs, lists and inline code', () => {
    const html = renderMarkdown('## Title\n\nsome `code` and **bold**\nmore\n\n- a\n- b\n\n1. one\n2. two');
    expect(html).toBe(
      '<h2>Title</h2>\n<p>some <code>code</code> and <strong>bold</strong> more</p>\n<ul><li>a</li><li>b</li></ul>\n<ol><li>one</li><li>two</li></ol>',
    );
  });

  it('escapes quotes for attributes', () => {
    expect(escapeHtml(`"'&`)).toBe('&quot;&#39;&amp;');
  });
});

describe('the media switch', () => {
  it('picks a preview by media type', () => {
    expect(previewKind(content('text/markdown', '# a'))).toBe('markdown');
    expect(previewKind(content('application/json', '{}'))).toBe('json');
    expect(previewKind(content('text/plain', 'x'))).toBe('text');
    expect(previewKind(content('text/html', '<p>'))).toBe('html');
    expect(previewKind(content('image/png', null, 'iVBORw=='))).toBe('image');
    expect(previewKind(content('image/png', null, null))).toBe('none');
    expect(previewKind(content('application/octet-stream', null))).toBe('none');
    expect(prettyJson('{"a":1}')).toBe('{\n  "a": 1\n}');
    expect(prettyJson('{cut')).toBe('{cut');
  });

  let root: Root | null = null;
  let host: HTMLElement | null = null;
  afterEach(() => {
    act(() => root?.unmount());
    host?.remove();
  });
  const show = (c: ArtifactContent): HTMLElement => {
    host = document.createElement('div');
    document.body.append(host);
    root = createRoot(host);
    act(() => root?.render(<ArtifactBody content={c} />));
    return host;
  };

  it('renders images as data URLs, HTML in an empty sandbox, others as size', () => {
    const img = show(content('image/png', null, 'iVBORw==')).querySelector('img');
    expect(img?.getAttribute('src')).toBe('data:image/png;base64,iVBORw==');
    act(() => root?.unmount());
    const frame = show(content('text/html', '<script>alert(1)</script>')).querySelector('iframe');
    expect(frame?.getAttribute('sandbox')).toBe('');
    act(() => root?.unmount());
    expect(show(content('application/octet-stream', null)).textContent).toContain('No preview; size 42 B');
    act(() => root?.unmount());
    const md = show(content('text/markdown', '<script>x</script>'));
    expect(md.querySelector('script')).toBeNull();
    expect(md.textContent).toContain('<script>x</script>');
  });
});
