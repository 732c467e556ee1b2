/**
 * A unified git diff (`git diff`, a stage's `diff.patch`, a run's
 * `final.patch`) parsed into files, hunks and lines for the Files Changed
 * view.
 *
 * The patch is whatever a stage's agent made of the work tree, so it is
 * hostile input: the parser walks it line by line without splitting it
 * whole, keeps at most `PATCH_LINES_MAX` lines and `PATCH_FILES_MAX` files,
 * cuts each kept line to `LINE_CHARS_MAX` characters, and says what it
 * left out (`ParsedPatch.cut`). Anything it does not recognise is skipped,
 * never thrown.
 */

/** The most patch lines read (headers included); the rest is left out. */
export const PATCH_LINES_MAX = 300_000;
/** The most files kept. */
export const PATCH_FILES_MAX = 5_000;
/** A line longer than this is cut (the view never wraps). */
export const LINE_CHARS_MAX = 2_000;

export type FileStatus = 'added' | 'modified' | 'deleted' | 'renamed' | 'copied';

export interface DiffLine {
  kind: 'context' | 'add' | 'del' | 'note';
  /** Without the leading ' ', '+', '-' or '\'. */
  text: string;
  /** 1-based line numbers on each side; null where the line is not on that side. */
  oldNo: number | null;
  newNo: number | null;
  /** The line was longer than `LINE_CHARS_MAX` and is cut. */
  long?: boolean;
}

export interface Hunk {
  /** The `@@ -a,b +c,d @@ context` line as written. */
  header: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: DiffLine[];
}

export interface DiffFile {
  /** The path after the change (before it, for a deleted file). */
  path: string;
  /** The path before a rename or copy. */
  oldPath: string | null;
  status: FileStatus;
  /** `Binary files … differ` or a `GIT binary patch`: named, not shown. */
  binary: boolean;
  /** `old mode 100644` → `new mode 100755`, when the mode changed. */
  modeChange: string | null;
  additions: number;
  deletions: number;
  hunks: Hunk[];
}

export interface ParsedPatch {
  files: DiffFile[];
  /** Why the parse stopped before the end of the patch; null when it read it all. */
  cut: string | null;
}

/** A patch's line source that never splits the whole text. */
function lineReader(text: string) {
  let at = 0;
  const reader = {
    /** Whether the line `next` returned last was cut to `LINE_CHARS_MAX`. */
    long: false,
    /** The next line without its `\n` (and `\r`), or null at the end. */
    next(): string | null {
      if (at >= text.length) return null;
      const nl = text.indexOf('\n', at);
      const end = nl < 0 ? text.length : nl;
      // Only what is kept is copied: a 50 MB line costs no more than a short one.
      reader.long = end - at > LINE_CHARS_MAX;
      const line = text.slice(at, Math.min(end, at + LINE_CHARS_MAX));
      at = nl < 0 ? text.length : nl + 1;
      return !reader.long && line.endsWith('\r') ? line.slice(0, -1) : line;
    },
  };
  return reader;
}

/**
 * A path from a `---`/`+++`/`rename` line: without its `a/`/`b/` prefix
 * (when `prefixed`), C-quoted paths (`"a/t\303\251st"`) unquoted, and
 * `/dev/null` as null.
 */
export function headerPath(raw: string, prefixed: boolean): string | null {
  let p = raw.replace(/\t.*$/, '');
  if (p.startsWith('"') && p.endsWith('"') && p.length >= 2) p = unquote(p.slice(1, -1));
  if (p === '/dev/null') return null;
  if (prefixed && /^[abciwo]\//.test(p)) p = p.slice(2);
  return p;
}

/** Git's C-style quoting: `\n`, `\t`, `\"`, `\\` and octal bytes (UTF-8). */
function unquote(s: string): string {
  const bytes: number[] = [];
  const enc = new TextEncoder();
  for (let i = 0; i < s.length; i += 1) {
    const c = s[i];
    if (c !== '\\' || i + 1 >= s.length) {
      bytes.push(...enc.encode(c));
      continue;
    }
    const n = s[i + 1] ?? '';
    const oct = /^[0-7]{3}/.exec(s.slice(i + 1, i + 4));
    if (oct) {
      bytes.push(parseInt(oct[0], 8) & 0xff);
      i += 3;
    } else {
      const map: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\', a: '\x07', b: '\b', f: '\f', v: '\v' };
      bytes.push(...enc.encode(map[n] ?? n));
      i += 1;
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** `diff --git a/x b/y` → [x, y] when it can be told apart (same path, or no spaces). */
function gitLinePaths(rest: string): [string, string] | null {
  if (rest.startsWith('"')) {
    const m = /^"((?:[^"\\]|\\.)*)" "?(.*?)"?$/.exec(rest);
    return m ? [headerPath(`"${m[1] ?? ''}"`, true) ?? '', headerPath(m[2] ?? '', true) ?? ''] : null;
  }
  // `a/P b/P`: the same path twice (the usual case) splits in the middle.
  const half = (rest.length - 1) / 2;
  if (Number.isInteger(half) && rest[half] === ' ' && rest.slice(2, half) === rest.slice(half + 3)) {
    const p = rest.slice(2, half);
    return [p, p];
  }
  const parts = rest.split(' ');
  const [a, b] = parts;
  return parts.length === 2 && a !== undefined && b !== undefined ? [headerPath(a, true) ?? '', headerPath(b, true) ?? ''] : null;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/** Parses `text` as a unified git diff, bounded; see the module comment. */
export function parsePatch(text: string): ParsedPatch {
  const files: DiffFile[] = [];
  const reader = lineReader(text);
  let file: DiffFile | null = null;
  let hunk: Hunk | null = null;
  let oldLeft = 0;
  let newLeft = 0;
  let oldNo = 0;
  let newNo = 0;
  let read = 0;
  let cut: string | null = null;

  const startFile = (path: string, oldPath: string | null): DiffFile | null => {
    if (files.length >= PATCH_FILES_MAX) {
      cut = `only the first ${PATCH_FILES_MAX.toLocaleString('en-US')} files are shown`;
      return null;
    }
    const f: DiffFile = { path, oldPath, status: 'modified', binary: false, modeChange: null, additions: 0, deletions: 0, hunks: [] };
    files.push(f);
    return f;
  };

  for (let line = reader.next(); line !== null; line = reader.next()) {
    read += 1;
    if (read > PATCH_LINES_MAX) {
      cut = `only the first ${PATCH_LINES_MAX.toLocaleString('en-US')} lines of the patch are shown`;
      break;
    }
    const long = reader.long;

    // Inside a hunk, its counts say which lines are its own, so a content
    // line that looks like a header (`+diff --git`) never ends it.
    if (hunk && file && (oldLeft > 0 || newLeft > 0 || line.startsWith('\\'))) {
      const mark = line[0];
      const body = line.slice(1);
      if (mark === ' ' || (mark === undefined && line === '')) {
        hunk.lines.push({ kind: 'context', text: body, oldNo: oldNo++, newNo: newNo++, ...(long && { long }) });
        oldLeft -= 1;
        newLeft -= 1;
        continue;
      }
      if (mark === '-') {
        hunk.lines.push({ kind: 'del', text: body, oldNo: oldNo++, newNo: null, ...(long && { long }) });
        file.deletions += 1;
        oldLeft -= 1;
        continue;
      }
      if (mark === '+') {
        hunk.lines.push({ kind: 'add', text: body, oldNo: null, newNo: newNo++, ...(long && { long }) });
        file.additions += 1;
        newLeft -= 1;
        continue;
      }
      if (mark === '\\') {
        hunk.lines.push({ kind: 'note', text: line.slice(2), oldNo: null, newNo: null });
        continue;
      }
      // Not a hunk line: the hunk was shorter than it said; read on as a header.
      hunk = null;
    }

    if (line.startsWith('diff --git ')) {
      hunk = null;
      const paths = gitLinePaths(line.slice('diff --git '.length));
      file = startFile(paths?.[1] ?? '', paths && paths[0] !== paths[1] ? paths[0] : null);
      if (!file) break;
      continue;
    }
    if (!file) {
      // A plain `diff -u` patch has no `diff --git` line: `---` starts a file.
      if (line.startsWith('--- ')) {
        file = startFile(headerPath(line.slice(4), true) ?? '', null);
        if (!file) break;
      }
      continue;
    }
    const m = HUNK.exec(line);
    if (m) {
      hunk = {
        header: line,
        oldStart: Number(m[1]),
        oldLines: m[2] === undefined ? 1 : Number(m[2]),
        newStart: Number(m[3]),
        newLines: m[4] === undefined ? 1 : Number(m[4]),
        lines: [],
      };
      file.hunks.push(hunk);
      oldNo = hunk.oldStart;
      newNo = hunk.newStart;
      oldLeft = hunk.oldLines;
      newLeft = hunk.newLines;
      continue;
    }
    if (line.startsWith('--- ') && file.hunks.length > 0) {
      // The next file of a plain `diff -u` patch.
      hunk = null;
      file = startFile(headerPath(line.slice(4), true) ?? '', null);
      if (!file) break;
      continue;
    }
    if (line.startsWith('--- ')) {
      const p = headerPath(line.slice(4), true);
      if (p === null) file.status = 'added';
      else if (!file.path) file.path = p;
      continue;
    }
    if (line.startsWith('+++ ')) {
      const p = headerPath(line.slice(4), true);
      if (p === null) {
        file.status = 'deleted';
      } else {
        // A file may have started with a plain `---` line; the new path wins.
        file.path = p;
      }
      continue;
    }
    if (line.startsWith('new file mode')) file.status = 'added';
    else if (line.startsWith('deleted file mode')) file.status = 'deleted';
    else if (line.startsWith('rename from ')) {
      file.status = 'renamed';
      file.oldPath = headerPath(line.slice('rename from '.length), false);
    } else if (line.startsWith('rename to ')) {
      file.status = 'renamed';
      file.path = headerPath(line.slice('rename to '.length), false) ?? file.path;
    } else if (line.startsWith('copy from ')) {
      file.status = 'copied';
      file.oldPath = headerPath(line.slice('copy from '.length), false);
    } else if (line.startsWith('copy to ')) {
      file.status = 'copied';
      file.path = headerPath(line.slice('copy to '.length), false) ?? file.path;
    } else if (line.startsWith('old mode ')) file.modeChange = line.slice('old mode '.length);
    else if (line.startsWith('new mode ')) file.modeChange = `${file.modeChange ?? '?'} → ${line.slice('new mode '.length)}`;
    else if (line.startsWith('Binary files ') || line === 'GIT binary patch') {
      file.binary = true;
      const b = /^Binary files (.*) and (.*) differ$/.exec(line);
      const [, before = '', after = ''] = b ?? [];
      if (b) {
        if (before === '/dev/null') file.status = 'added';
        if (after === '/dev/null') file.status = 'deleted';
        if (!file.path) file.path = headerPath(after === '/dev/null' ? before : after, true) ?? '';
      }
    }
    // Anything else (`index …`, `similarity index`, binary patch data) is skipped.
  }
  // A deleted file is known by its old path.
  for (const f of files) if (!f.path && f.oldPath) f.path = f.oldPath;
  return { files, cut };
}

/** The added and removed line counts of every file together. */
export function patchTotals(files: readonly DiffFile[]): { additions: number; deletions: number } {
  let additions = 0;
  let deletions = 0;
  for (const f of files) {
    additions += f.additions;
    deletions += f.deletions;
  }
  return { additions, deletions };
}
