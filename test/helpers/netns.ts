// Several machines on one, for the node rehearsal: a Linux bridge in the root namespace with an
// address of its own (where the test's Postgres, Redis and sink listen), and one network
// namespace per node joined to it by a veth pair. Nothing leaves the machine: the addresses are
// from 10.0.0.0/8, picked per run, and there is no route out. Needs root (`ip netns`).
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { promisify } from 'node:util';
import { track } from './resources.js';

const exec = promisify(execFile);

async function ip(...args: string[]): Promise<void> {
  await exec('ip', args);
}

export interface NetNode {
  /** The namespace's name (`ip netns exec <ns> …`). */
  ns: string;
  /** The node's address on the bridge. */
  address: string;
  /** The root-side end of its veth pair: down cuts the node off, up joins it again. */
  link: string;
}

export interface NetNodes {
  /** The bridge's address in the root namespace: listen here to be reachable from every node. */
  host: string;
  nodes: NetNode[];
  /** Cuts the node off the network (its link down) or joins it again. */
  setLink(node: NetNode, up: boolean): Promise<void>;
  destroy(): Promise<void>;
}

export async function makeNetNodes(n: number): Promise<NetNodes> {
  const tag = randomInt(0x1000, 0xffff).toString(16);
  const net = `10.${randomInt(100, 250)}.${randomInt(1, 250)}`;
  const bridge = `tnbr${tag}`;
  const nodes: NetNode[] = Array.from({ length: n }, (_, i) => ({
    ns: `tern-node-${tag}-${i}`,
    address: `${net}.${10 + i}`,
    link: `tnv${tag}${i}`,
  }));
  const destroy = track(`network namespaces ${tag}`, async () => {
    for (const node of nodes) await ip('netns', 'del', node.ns).catch(() => undefined);
    await ip('link', 'del', bridge).catch(() => undefined);
  });
  try {
    await ip('link', 'add', bridge, 'type', 'bridge');
    await ip('addr', 'add', `${net}.1/24`, 'dev', bridge);
    await ip('link', 'set', bridge, 'up');
    for (const node of nodes) {
      await ip('netns', 'add', node.ns);
      await ip('link', 'add', node.link, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', node.ns);
      await ip('link', 'set', node.link, 'master', bridge);
      await ip('link', 'set', node.link, 'up');
      await ip('-n', node.ns, 'addr', 'add', `${node.address}/24`, 'dev', 'eth0');
      await ip('-n', node.ns, 'link', 'set', 'eth0', 'up');
      await ip('-n', node.ns, 'link', 'set', 'lo', 'up');
    }
  } catch (err) {
    await destroy();
    throw err;
  }
  return {
    host: `${net}.1`,
    nodes,
    setLink: (node, up) => ip('link', 'set', node.link, up ? 'up' : 'down'),
    destroy,
  };
}
