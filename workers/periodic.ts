// A task run every `everyMs` by a worker process (sweeps, scans): never two runs of it at once (a
// slow run makes the next tick skip), a failure goes to `onError` and the next tick tries again.
// The timer does not keep the process alive; the returned function stops it.
export function runEvery(everyMs: number, task: () => Promise<unknown>, onError: (err: unknown) => void): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    task()
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
