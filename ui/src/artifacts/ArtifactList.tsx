import type { ArtifactRecord } from '../api';

/** `12.3 KB`. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** The files the run captured, in capture order, with the stage that made each. */
export function ArtifactList({ artifacts, onSelectStage }: { artifacts: readonly ArtifactRecord[]; onSelectStage: (node: string, visit: number) => void }) {
  if (artifacts.length === 0) return <p className="muted">No artifacts were captured.</p>;
  return (
    <table className="artifacts" data-testid="artifacts">
      <thead>
        <tr>
          <th>Path</th>
          <th>Size</th>
          <th>Stage</th>
        </tr>
      </thead>
      <tbody>
        {artifacts.map((a) => (
          <tr key={`${a.path}#${a.node_id}@${a.visit}`}>
            <td className="run-mono">{a.path}</td>
            <td>{formatSize(a.size)}</td>
            <td>
              <button type="button" className="link" onClick={() => onSelectStage(a.node_id, a.visit)}>
                {a.node_id}
                {a.visit > 1 ? `@${a.visit}` : ''}
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
