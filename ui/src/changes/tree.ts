import type { DiffFile, FileStatus } from './patch';

/** A folder or file of the changed-files tree, with its counts rolled up. */
export interface TreeNode {
  /** The segment shown: a file's name, or a folder's (a chain of folders with one child each is joined: `src/app`). */
  name: string;
  /** The full path (a folder's without a trailing slash). */
  path: string;
  /** The file's index in the patch's files; null for a folder. */
  file: number | null;
  status: FileStatus | null;
  binary: boolean;
  additions: number;
  deletions: number;
  /** How many changed files the node holds (1 for a file). */
  files: number;
  children: TreeNode[];
}

/** A tree row as drawn: the node and its depth. */
export interface TreeRow {
  node: TreeNode;
  depth: number;
}

function folder(name: string, path: string): TreeNode {
  return { name, path, file: null, status: null, binary: false, additions: 0, deletions: 0, files: 0, children: [] };
}

/**
 * The files as a tree of folders, each folder holding the sum of its
 * files' added and removed lines and their number; folders first, then
 * files, each by name; single-child folder chains joined into one row.
 */
export function fileTree(files: readonly DiffFile[]): TreeNode {
  const root = folder('', '');
  // Folders by path: 5,000 files in one folder must not mean 5,000² look-ups.
  const folders = new Map<string, TreeNode>([['', root]]);
  files.forEach((f, index) => {
    const segments = f.path.split('/').filter((s) => s !== '');
    const name = segments.pop() ?? f.path;
    let at = root;
    const chain: TreeNode[] = [root];
    for (const segment of segments) {
      const path = at.path ? `${at.path}/${segment}` : segment;
      let next = folders.get(path);
      if (!next) {
        next = folder(segment, path);
        folders.set(path, next);
        at.children.push(next);
      }
      at = next;
      chain.push(at);
    }
    at.children.push({
      name,
      path: f.path,
      file: index,
      status: f.status,
      binary: f.binary,
      additions: f.additions,
      deletions: f.deletions,
      files: 1,
      children: [],
    });
    for (const node of chain) {
      node.additions += f.additions;
      node.deletions += f.deletions;
      node.files += 1;
    }
  });
  sortAndJoin(root);
  return root;
}

function sortAndJoin(node: TreeNode): void {
  node.children.sort((a, b) => (a.file === null) !== (b.file === null) ? (a.file === null ? -1 : 1) : a.name.localeCompare(b.name));
  node.children = node.children.map((child) => {
    let c = child;
    // `src` holding only `app` becomes one row `src/app`.
    for (let only = c.children[0]; c.file === null && c.children.length === 1 && only && only.file === null; only = c.children[0]) {
      c = { ...only, name: `${c.name}/${only.name}` };
    }
    sortAndJoin(c);
    return c;
  });
}

/** The tree's rows in order, skipping the children of `collapsed` folders (by path). */
export function treeRows(root: TreeNode, collapsed: ReadonlySet<string> = new Set()): TreeRow[] {
  const rows: TreeRow[] = [];
  const walk = (node: TreeNode, depth: number) => {
    for (const child of node.children) {
      rows.push({ node: child, depth });
      if (child.file === null && !collapsed.has(child.path)) walk(child, depth + 1);
    }
  };
  walk(root, 0);
  return rows;
}

/** The one-letter badge of a file's status. */
export function statusBadge(status: FileStatus): string {
  return { added: 'A', modified: 'M', deleted: 'D', renamed: 'R', copied: 'C' }[status];
}
