import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { VersionLine } from './VersionLine';

describe('VersionLine', () => {
  it('names the version the backend reported', () => {
    const html = renderToStaticMarkup(<VersionLine state={{ status: 'ready', version: '1.2.3' }} />);
    expect(html).toContain('Version 1.2.3');
  });

  it('shows no version number while the backend has not answered', () => {
    const html = renderToStaticMarkup(<VersionLine state={{ status: 'loading' }} />);
    expect(html).not.toMatch(/\d+\.\d+/);
  });

  it('says what failed instead of showing a blank line', () => {
    const html = renderToStaticMarkup(
      <VersionLine state={{ status: 'failed', message: 'command app_version not found' }} />,
    );
    expect(html).toContain('role="alert"');
    expect(html).toContain('command app_version not found');
  });
});
