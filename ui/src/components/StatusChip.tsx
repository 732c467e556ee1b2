import type { RunStatus } from '../api/host';
import './statusChip.css';

/** A glyph per status, so the chip reads without colour too. */
const GLYPH: Record<RunStatus, string> = {
  queued: '○',
  running: '●',
  blocked: '‖',
  succeeded: '✓',
  failed: '✕',
  cancelled: '⊘',
  interrupted: '⚠',
};

/** A run's status as a coloured chip with its glyph and name. */
export function StatusChip({ status }: { status: RunStatus }) {
  return (
    <span className={`status-chip status-chip--${status}`} data-status={status}>
      <span aria-hidden="true">{GLYPH[status] ?? '•'}</span> {status}
    </span>
  );
}
