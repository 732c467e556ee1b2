import { useState } from 'react';

import type { Host } from '../api';
import { ActionStatus, useDaemonAction } from '../gates/daemonAction';

/**
 * Steering a running agent stage (human-tools/steering.mdx): the message
 * goes to weftd (`run.steer`), which hands it to the agent before its next
 * model call; the transcript shows it as "Steered" once the agent got it.
 */
export function SteerBox({ host, runId, node }: { host: Host; runId: string; node: string }) {
  const [text, setText] = useState('');
  const action = useDaemonAction(host);
  const busy = action.state.kind === 'busy';
  const send = () => {
    const message = text.trim();
    if (!message) return;
    void action
      .run('Steering the agent', async () => {
        await host.steerStage(runId, node, message);
        return 'Sent: the agent reads it before its next turn.';
      })
      .then((sent) => sent && setText(''));
  };
  return (
    <form
      className="steer"
      data-testid="steer-box"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <textarea
        aria-label="Message to the agent"
        placeholder="Steer the agent: a message it reads before its next turn…"
        value={text}
        disabled={busy}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          // Ctrl/Cmd+Enter sends, as in a chat box; Enter alone is a new line.
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            send();
          }
        }}
      />
      <button type="submit" disabled={busy || !text.trim()}>
        Send to the agent
      </button>
      <ActionStatus state={action.state} onStartDaemon={() => void action.startDaemon()} />
    </form>
  );
}
