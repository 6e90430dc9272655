/**
 * How the offline servers' commands (`simulator`, `embeddings-twin`) run: SIGINT and SIGTERM are
 * listened for before the server starts (whoever reads the line it prints may signal at once),
 * then the server runs until one arrives and is closed.
 */
export async function serveUntilSignal<S extends { close(): Promise<void> }>(
  start: () => Promise<S>,
  onStop: (signal: NodeJS.Signals | undefined) => void,
): Promise<void> {
  let signal: NodeJS.Signals | undefined;
  let wake: (() => void) | undefined;
  const onSignal = (s: NodeJS.Signals) => {
    signal = s;
    wake?.();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const server = await start();
    if (signal === undefined) {
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
    onStop(signal);
    await server.close();
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
