// A local Redis Cluster for tests: three masters (redis-server --cluster-enabled) on free loopback
// ports, joined by `redis-cli --cluster create`, in a temporary folder; stopped and removed by
// close(). Its URL is Tern's `redis+cluster://` form.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';
import { accepts } from './processes.js';
import { track } from './resources.js';
import { waitFor } from './wait.js';

const run = promisify(execFile);

export interface RedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` */
  url: string;
  ports: number[];
  close(): Promise<void>;
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => (clearTimeout(timer), resolve()));
    child.kill('SIGTERM');
  });
}

export async function startRedisCluster(masters = 3): Promise<RedisCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'tern-redis-cluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  let output = '';
  const close = track('redis cluster', async () => {
    await Promise.all(children.map(stop));
    await rm(dir, { recursive: true, force: true });
  });
  try {
    // A port free a moment ago may be taken before redis-server binds it (other tests open
    // connections from the same ephemeral range): a node that exits is started again on new ports.
    const startNode = async (): Promise<number> => {
      for (let attempt = 1; ; attempt++) {
        // The bus port is named: the default (port + 10000) may be past 65535 for an ephemeral port.
        const [port, bus] = [await freePort(), await freePort()];
        const child = spawn(
          'redis-server',
          // prettier-ignore
          ['--port', String(port), '--cluster-port', String(bus), '--bind', '127.0.0.1',
            '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`),
            '--cluster-node-timeout', '5000', '--dir', dir, '--save', '', '--appendonly', 'no',
            '--maxmemory-policy', 'noeviction'],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
        child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
        children.push(child);
        await waitFor(
          `redis-server on ${port}`,
          async () => child.exitCode !== null || child.signalCode !== null || (await accepts(port)),
          15_000,
        );
        if (child.exitCode === null && child.signalCode === null) return port;
        if (attempt >= 5) throw new Error(`redis-server could not start on a free port (${attempt} tries)`);
      }
    };
    for (let i = 0; i < masters; i++) ports.push(await startNode());
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes']);
    await waitFor(
      'cluster_state:ok on every node',
      async () => {
        const infos = await Promise.all(ports.map((p) => run('redis-cli', ['-p', String(p), 'cluster', 'info'])));
        return infos.every((r) => r.stdout.includes('cluster_state:ok'));
      },
      30_000,
    );
    return { url: `redis+cluster://${nodes.join(',')}`, ports, close };
  } catch (err) {
    await close();
    (err as Error).message += `\n--- redis-server printed:\n${output.slice(-4000)}`;
    throw err;
  }
}
