import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

// Read from disk: Vitest hands CSS imports, `?raw` too, to tests as empty strings.
const SRC = fileURLToPath(new URL('..', import.meta.url));
/** Every stylesheet under src/, by its path there. */
const stylesheets: Record<string, string> = Object.fromEntries(
  readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.css'))
    .map((path) => [path, readFileSync(`${SRC}/${path}`, 'utf8')]),
);
const palette = stylesheets['app/palette.css'] ?? '';

type Rgb = [number, number, number];
type Vars = Record<string, string>;

/** The custom properties set by the rule whose selector is `selector` (the first such rule). */
function varsOf(css: string, selector: string): Vars {
  const start = css.indexOf(`${selector} {`);
  if (start < 0) throw new Error(`palette.css has no rule ${selector}`);
  const body = css.slice(css.indexOf('{', start) + 1, css.indexOf('}', start));
  const vars: Vars = {};
  for (const [, name, value] of body.matchAll(/(--[\w-]+)\s*:\s*([^;]+);/g)) vars[name!] = value!.trim();
  return vars;
}

const LIGHT = varsOf(palette, ':root');
const DARK_FROM_OS = varsOf(palette, ":root:not([data-theme='light'])");
const DARK_BY_SETTING = varsOf(palette, ":root[data-theme='dark']");
const THEMES = { light: LIGHT, dark: DARK_BY_SETTING };

function rgb(hex: string): Rgb {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m) throw new Error(`not a #rrggbb colour: ${hex}`);
  return [parseInt(m[1]!, 16), parseInt(m[2]!, 16), parseInt(m[3]!, 16)];
}

/** `color-mix(in srgb, a p%, b)`: each channel mixed as stored (gamma-encoded). */
function mix(a: Rgb, p: number, b: Rgb): Rgb {
  return a.map((c, i) => c * p + b[i]! * (1 - p)) as Rgb;
}

/** WCAG 2 relative luminance. */
function luminance([r, g, b]: Rgb): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** WCAG 2 contrast ratio, 1 to 21. */
function contrast(a: Rgb, b: Rgb): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

const STATUSES = ['pending', 'running', 'retrying', 'waiting', 'succeeded', 'partial', 'failed', 'skipped'];
/** Normal-size text needs 4.5:1 (WCAG AA). */
const TEXT_MIN = 4.5;

/** Every text-on-background pair the stylesheets draw, named for the failure message. */
function pairs(vars: Vars): Array<{ what: string; text: Rgb; on: Rgb }> {
  const c = (name: string) => {
    const value = vars[`--${name}`];
    if (!value) throw new Error(`the palette has no --${name}`);
    return rgb(value);
  };
  const out: Array<{ what: string; text: Rgb; on: Rgb }> = [];
  const add = (what: string, text: Rgb, on: Rgb) => out.push({ what, text, on });
  for (const ground of ['bg', 'surface', 'code-bg']) add(`text on ${ground}`, c('fg'), c(ground));
  add('muted text on bg', c('muted'), c('bg'));
  add('muted text on surface', c('muted'), c('surface'));
  add('accent (links, taken edge labels) on bg', c('accent'), c('bg'));
  add('button text on accent', c('on-accent'), c('accent'));
  add('error on bg', c('error'), c('bg'));
  add('warning on bg', c('warning'), c('bg'));
  add('badge text on warning', c('on-status'), c('warning'));
  // The graph's node count badge: bg text on an fg pill.
  add('graph badge', c('bg'), c('fg'));
  for (const s of STATUSES) {
    const status = c(`status-${s}`);
    add(`${s} text on bg`, status, c('bg'));
    // Status chips: the status on a 12% tint of itself.
    add(`${s} chip`, status, mix(status, 0.12, c('bg')));
    // Graph nodes: the label (fg) on a 14% tint of the state over the page.
    add(`graph node label, ${s}`, c('fg'), mix(status, 0.14, c('bg')));
    // Graph glyphs and legend swatches: on-status on the solid state colour.
    add(`graph glyph, ${s}`, c('on-status'), status);
  }
  for (const s of ['keyword', 'string', 'comment', 'number', 'title', 'type']) add(`syntax ${s} on bg`, c(`syntax-${s}`), c('bg'));
  return out;
}

describe('the palette', () => {
  it('gives the dark set the same colours from the OS and from the setting', () => {
    expect(Object.keys(DARK_BY_SETTING).length).toBeGreaterThan(10);
    expect(DARK_FROM_OS).toEqual(DARK_BY_SETTING);
  });

  it('defines every colour in both themes', () => {
    expect(Object.keys(DARK_BY_SETTING).sort()).toEqual(Object.keys(LIGHT).sort());
  });

  for (const [theme, vars] of Object.entries(THEMES)) {
    it(`keeps text readable (at least ${TEXT_MIN}:1) in the ${theme} theme`, () => {
      const failing = pairs(vars)
        .map((p) => ({ what: p.what, ratio: Math.round(contrast(p.text, p.on) * 100) / 100 }))
        .filter((p) => p.ratio < TEXT_MIN);
      expect(failing).toEqual([]);
    });
  }

  it('computes the WCAG ratio of black on white as 21 and of a colour on itself as 1', () => {
    expect(contrast(rgb('#000000'), rgb('#ffffff'))).toBeCloseTo(21, 5);
    expect(contrast(rgb('#777777'), rgb('#777777'))).toBeCloseTo(1, 5);
    // #767676 on white is the usual example of just passing AA.
    expect(contrast(rgb('#767676'), rgb('#ffffff'))).toBeGreaterThan(4.5);
  });
});

describe('the stylesheets', () => {
  const others = Object.entries(stylesheets).filter(([path]) => path !== 'app/palette.css');

  it('name no colour of their own: every colour comes from the palette', () => {
    const literal = /#[0-9a-f]{3,8}\b|\b(?:rgba?|hsla?|hwb|lab|lch|oklab|oklch)\(|:\s*[^;{}]*\b(?:white|black|red|green|blue|gray|grey|orange|purple|yellow)\b/i;
    const offenders = others.flatMap(([path, css]) =>
      css
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .split('\n')
        .map((line, i) => ({ where: `${path}:${i + 1}`, line: line.trim() }))
        .filter(({ line }) => !line.startsWith('white-space') && literal.test(line)),
    );
    expect(others.length).toBeGreaterThan(5);
    expect(offenders).toEqual([]);
  });

  it('leave colour schemes to the palette (no prefers-color-scheme of their own)', () => {
    expect(others.filter(([, css]) => css.includes('prefers-color-scheme')).map(([path]) => path)).toEqual([]);
  });

  it('use only custom properties that some stylesheet defines', () => {
    const all = Object.values(stylesheets).join('\n');
    const defined = new Set([...all.matchAll(/(--[\w-]+)\s*:/g)].map((m) => m[1]));
    const used = new Set([...all.matchAll(/var\(\s*(--[\w-]+)/g)].map((m) => m[1]));
    expect([...used].filter((name) => !defined.has(name))).toEqual([]);
  });
});
