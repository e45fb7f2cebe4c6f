// The delivery journal's folder (DELIVERY_JOURNAL_DIR, workers/delivery/journal.ts): a worker that
// takes over a killed one's attempt reads the killed one's journal there, so the folder must be
// the same for every worker process of the machine and outlive the process. /tmp and /var/tmp are
// private to each systemd unit (PrivateTmp=yes) and a tmpfs is emptied at reboot.
import { statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, resolve, sep } from 'node:path';
import { ok, warn, type Check } from './check.js';

/** statfs's f_type of a tmpfs (linux/magic.h TMPFS_MAGIC). */
const TMPFS_MAGIC = 0x01021994;

const NAME = 'Delivery journal';
const FIX =
  'set DELIVERY_JOURNAL_DIR to a persistent folder every worker of this machine can write (the systemd units: /var/lib/tern/delivery-journal, their StateDirectory)';

const under = (path: string, root: string) => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

/** The file system type of the nearest existing folder of `path`, or null when none answers. */
async function fsType(path: string): Promise<number | null> {
  for (let p = path; ; p = dirname(p)) {
    try {
      return (await statfs(p)).type;
    } catch {
      if (dirname(p) === p) return null;
    }
  }
}

export async function journalCheck(dir: string): Promise<Check> {
  const path = resolve(dir);
  const temporary = ['/tmp', '/var/tmp', resolve(tmpdir())].find((root) => under(path, root));
  if (temporary) {
    return warn(
      NAME,
      `${path} is under ${temporary}: systemd gives each unit its own (PrivateTmp), so a takeover cannot read a killed worker's journal, and it may be cleared`,
      FIX,
    );
  }
  if ((await fsType(path)) === TMPFS_MAGIC) {
    return warn(NAME, `${path} is on a tmpfs: emptied at every reboot`, FIX);
  }
  return ok(NAME, path);
}
