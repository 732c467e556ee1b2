import type { PermissionAsk } from '../api';

/**
 * What each kind of tool call asks to do, in words (ACP's `ToolKind`s);
 * an unknown kind is shown as the agent named it.
 */
const KIND_WORDS: Record<string, string> = {
  read: 'read files',
  edit: 'edit files',
  delete: 'delete files',
  move: 'move or rename files',
  search: 'search',
  execute: 'run a command',
  think: 'think',
  fetch: 'fetch from the network',
  other: 'use a tool',
};

/** What an option grants, for its tooltip, by the agent's option kind. */
const OPTION_WORDS: Record<string, string> = {
  allow_once: 'Allow this call only',
  allow_always: 'Allow this call and ones like it from now on',
  reject_once: 'Refuse this call only',
  reject_always: 'Refuse this call and ones like it from now on',
};

/** How an option looks: allowing, refusing, or neither (an unknown kind). */
export type OptionTone = 'allow' | 'reject' | null;

/** The agent's kind of the option at `index` (labelled `label`), if known. */
export function optionKind(permission: PermissionAsk, label: string, index: number): string | null {
  const at = permission.options[index];
  if (at && at.label === label) return at.kind;
  return permission.options.find((o) => o.label === label)?.kind ?? null;
}

/** `allow` for allow_once / allow_always, `reject` for reject_*, else null. */
export function toneOf(kind: string | null): OptionTone {
  if (kind?.startsWith('allow')) return 'allow';
  if (kind?.startsWith('reject')) return 'reject';
  return null;
}

/** The tooltip of an option of this kind, if the kind is a known one. */
export function optionHint(kind: string | null): string | undefined {
  return kind ? OPTION_WORDS[kind] : undefined;
}

/**
 * The option a permission question's timeout picks: the first of the agent's
 * allowing options under `acp.permission_default="allow"`, else the first
 * refusing one (as the engine picks it).
 */
export function permissionDefault(permission: PermissionAsk, policy: string | null): string | null {
  const kinds = policy === 'allow' ? ['allow_once', 'allow_always'] : ['reject_once', 'reject_always'];
  for (const kind of kinds) {
    const option = permission.options.find((o) => o.kind === kind);
    if (option) return option.label;
  }
  return null;
}

/**
 * An external agent's permission request: what kind of call, the paths it
 * names, and the command or input it would run with (both bounded in height,
 * scrolling when long).
 */
export function PermissionDetails({ permission }: { permission: PermissionAsk }) {
  const kind = permission.tool_kind || 'other';
  const words = KIND_WORDS[kind] ?? kind;
  return (
    <div className="permission" data-testid="permission">
      <p className="permission__what">
        <span className={`permission__kind permission__kind--${kind}`} data-testid="permission-kind">
          {kind}
        </span>
        <span>
          {permission.agent} wants to {words}
          {permission.locations.length > 0 ? ':' : '.'}
        </span>
      </p>
      {permission.locations.length > 0 && (
        <ul className="permission__paths" data-testid="permission-paths" aria-label="Paths">
          {permission.locations.map((path) => (
            <li key={path}>
              <code>{path}</code>
            </li>
          ))}
        </ul>
      )}
      {permission.command && (
        <pre className="permission__code" data-testid="permission-command" aria-label="Command">
          <span className="permission__prompt" aria-hidden="true">
            ${' '}
          </span>
          {permission.command}
        </pre>
      )}
      {permission.input && (
        // With a command shown the input only adds detail (a description,
        // a working directory), so it starts folded.
        <details className="permission__input" open={!permission.command}>
          <summary>{permission.command ? 'Full input' : 'Input'}</summary>
          <pre className="permission__code" data-testid="permission-input">
            {permission.input}
          </pre>
        </details>
      )}
    </div>
  );
}
