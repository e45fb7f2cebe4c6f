// Loopback ports for tests: one that was free a moment ago (nobody listens on it now).
import { createServer, type AddressInfo } from 'node:net';

export async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => s.once('listening', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
