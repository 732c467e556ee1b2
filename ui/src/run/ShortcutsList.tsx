import type { Choice } from '../gates/accelerator';
import { RUN_SHORTCUTS } from './shortcuts';

/**
 * The `?` overlay of the run screen: every shortcut, the open question's
 * option keys among them, and how to close it.
 */
export function ShortcutsList({
  gate,
  onClose,
}: {
  /** The question on screen, when its options answer from the keyboard. */
  gate: { node: string; choices: readonly Choice[] } | null;
  onClose: () => void;
}) {
  const gateKeys = gate?.choices.filter((c) => c.hotkey) ?? [];
  return (
    <div className="shortcuts" role="dialog" aria-label="Keyboard shortcuts" data-testid="shortcuts">
      <div className="shortcuts__panel">
        <header className="shortcuts__head">
          <h3>Keyboard shortcuts</h3>
          <button type="button" onClick={onClose} aria-label="Close the shortcuts">
            ×
          </button>
        </header>
        <dl className="shortcuts__list">
          {RUN_SHORTCUTS.map((s) => (
            <div key={s.what} data-testid="shortcut">
              <dt>
                {s.keys.map((k) => (
                  <kbd key={k}>{k}</kbd>
                ))}
              </dt>
              <dd>{s.what}</dd>
            </div>
          ))}
          {gateKeys.map((c) => (
            <div key={c.label} data-testid="shortcut" data-gate-key={c.hotkey}>
              <dt>
                <kbd>{c.hotkey}</kbd>
              </dt>
              <dd>
                Answer <strong>{c.text}</strong> at {gate?.node}
              </dd>
            </div>
          ))}
        </dl>
        <p className="muted">
          A question's options answer from the keyboard with the key shown on each button. Shortcuts wait while you type in
          a text field, and ignore Ctrl, Alt and ⌘.
        </p>
      </div>
    </div>
  );
}
