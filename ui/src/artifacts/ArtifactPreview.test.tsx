// @vitest-environment happy-dom
import { act } from 'react';
import { describe, expect, it } from 'vitest';

import type { ArtifactContent, Host } from '../api';
import { recorded } from '../api/fixtures/recorded';
import { makeTestHost } from '../api/testHost';
import { cleanup, render as mount, renderNow } from '../render.test-helper';
import { ArtifactBody, ArtifactPreview, prettyJson, previewKind } from './ArtifactPreview';
import { escapeHtml, renderMarkdown } from './markdown';

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

  const show = (c: ArtifactContent): HTMLElement => renderNow(<ArtifactBody content={c} />);

  it('renders images as data URLs, HTML in an empty sandbox, others as size', () => {
    const img = show(content('image/png', null, 'iVBORw==')).querySelector('img');
    expect(img?.getAttribute('src')).toBe('data:image/png;base64,iVBORw==');
    cleanup();
    const frame = show(content('text/html', '<script>alert(1)</script>')).querySelector('iframe');
    expect(frame?.getAttribute('sandbox')).toBe('');
    cleanup();
    expect(show(content('application/octet-stream', null)).textContent).toContain('No preview; size 42 B');
    cleanup();
    const md = show(content('text/markdown', '<script>x</script>'));
    expect(md.querySelector('script')).toBeNull();
    expect(md.textContent).toContain('<script>x</script>');
  });
});

describe('reveal in folder', () => {
  // The recorded release run captured reports (tests/tests/it/ui_fixtures.rs).
  const view = recorded.views.find((v) => v.artifacts.length > 0);
  const render = async (host: Host): Promise<HTMLElement> => {
    if (!view) throw new Error('the recorded fixtures have no run with artifacts');
    const container = await mount(<ArtifactPreview host={host} runId={view.run.id} artifacts={view.artifacts} />);
    const path = view.artifacts[0]?.path ?? '';
    const button = [...container.querySelectorAll('button')].find((b) => b.textContent === path);
    await act(async () => button?.click());
    const reveal = container.querySelector<HTMLButtonElement>('[data-testid=artifact-reveal]');
    expect(reveal, 'a selected artifact offers Reveal in folder').not.toBeNull();
    await act(async () => reveal?.click());
    return container;
  };

  it('says where the file was written', async () => {
    const shown = await render(makeTestHost(recorded));
    const said = shown.querySelector('[data-testid=artifact-revealed]')?.textContent ?? '';
    expect(said).toContain(`${view?.run.run_dir}/artifacts/${view?.artifacts[0]?.path}`);
  });

  it('explains when no file manager could show it', async () => {
    const host: Host = {
      ...makeTestHost(recorded),
      revealArtifact: () => Promise.reject({ code: 'app.reveal_failed', message: 'no file manager could show /r/artifacts/x; the file is at /r/artifacts/x' }),
    };
    const shown = await render(host);
    expect(shown.querySelector('[role=alert]')?.textContent).toContain('the file is at /r/artifacts/x');
  });
});
