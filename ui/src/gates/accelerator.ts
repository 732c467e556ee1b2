// Accelerator keys of human-gate options, parsed exactly as the engine does
// (`parse_accelerator` in daemon/src/engine/interviewer.rs): `[K] Label`,
// `K) Label` and `K - Label` (spaces around the dash), the key 1 to 3
// letters or digits and the text after it not empty.

/** The longest accelerator key the engine accepts. */
const MAX_KEY_CHARS = 3;

/** One option of a question, split into its accelerator and its text. */
export interface Choice {
  /** The option as the question lists it (`[A] Approve`). */
  label: string;
  /** `A` from `[A] Approve`; null when the label has none. */
  key: string | null;
  /** The label without its accelerator (`Approve`). */
  text: string;
  /**
   * The single key that answers with this option from the keyboard: the
   * accelerator when it is one character, else the option's number (1-9)
   * when the option has no accelerator; null when neither applies.
   */
  hotkey: string | null;
}

const isKey = (key: string) => {
  const chars = [...key];
  return chars.length >= 1 && chars.length <= MAX_KEY_CHARS && chars.every((c) => /^[\p{L}\p{N}]$/u.test(c));
};

/** Splits a label into its accelerator key and the remaining text. */
export function parseAccelerator(label: string): { key: string | null; text: string } {
  const trimmed = label.trim();
  const forms: Array<(l: string) => [string, string] | null> = [
    (l) => {
      if (!l.startsWith('[')) return null;
      const end = l.indexOf(']');
      return end < 0 ? null : [l.slice(1, end), l.slice(end + 1).trim()];
    },
    (l) => {
      const end = l.indexOf(')');
      return end < 0 ? null : [l.slice(0, end), l.slice(end + 1).trim()];
    },
    (l) => {
      const dash = l.indexOf('-');
      if (dash < 0) return null;
      const key = l.slice(0, dash);
      const text = l.slice(dash + 1);
      return /\s$/.test(key) && /^\s/.test(text) ? [key.trimEnd(), text.trim()] : null;
    },
  ];
  for (const form of forms) {
    const parsed = form(trimmed);
    if (parsed && parsed[1] !== '' && isKey(parsed[0])) return { key: parsed[0], text: parsed[1] };
  }
  return { key: null, text: trimmed };
}

/** The choices of a question's options, with their keyboard keys. */
export function choicesOf(options: readonly string[]): Choice[] {
  const taken = new Set<string>();
  return options.map((label, i) => {
    const { key, text } = parseAccelerator(label);
    let hotkey: string | null = null;
    if (key && [...key].length === 1) hotkey = key.toLowerCase();
    else if (!key && i < 9) hotkey = String(i + 1);
    // Two options on one key: the first keeps it, as the engine's match does.
    if (hotkey && taken.has(hotkey)) hotkey = null;
    if (hotkey) taken.add(hotkey);
    return { label, key, text, hotkey };
  });
}

/** The choice a key press selects, if any (case ignored). */
export function choiceForKey(choices: readonly Choice[], key: string): Choice | undefined {
  const lower = key.toLowerCase();
  return choices.find((c) => c.hotkey === lower);
}
