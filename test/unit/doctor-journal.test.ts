// `tern doctor`'s delivery journal check: a folder under /tmp (private per systemd unit) or on a
// tmpfs (emptied at reboot) is a warning; a persistent folder is ok. DELIVERY_JOURNAL_DIR unset
// follows systemd's STATE_DIRECTORY.
import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { journalCheck } from '../../api/cli/doctor/journal.js';
import { loadToolConfig } from '../../shared/config.js';
import { packageRoot } from '../../shared/paths.js';

describe('tern doctor: the delivery journal folder', () => {
  it('warns about a folder under /tmp or /var/tmp, and the temporary default', async () => {
    for (const dir of ['/tmp/tern-delivery-journal', '/var/tmp/journal', loadToolConfig({}).deliveryJournalDir]) {
      const check = await journalCheck(dir);
      expect(check.status, dir).to.equal('warn');
      expect(check.message).to.match(/PrivateTmp/);
      expect(check.fix).to.contain('DELIVERY_JOURNAL_DIR');
    }
  });

  it('warns about a tmpfs, and is ok with a persistent folder (one not made yet included)', async () => {
    // /dev/shm is a tmpfs on Linux.
    if (existsSync('/dev/shm')) {
      const shm = await journalCheck('/dev/shm/tern-journal');
      expect(shm.status).to.equal('warn');
      expect(shm.message).to.match(/tmpfs/);
    }
    const persistent = await journalCheck(`${packageRoot()}/.data/no-such-folder/journal`);
    expect(persistent.status, persistent.message).to.equal('ok');
  });

  it('defaults to the unit state directory systemd names, then to the temporary folder', () => {
    expect(loadToolConfig({ STATE_DIRECTORY: '/var/lib/tern:/var/lib/other' }).deliveryJournalDir).to.equal(
      '/var/lib/tern/delivery-journal',
    );
    expect(
      loadToolConfig({ DELIVERY_JOURNAL_DIR: '/srv/j', STATE_DIRECTORY: '/var/lib/tern' }).deliveryJournalDir,
    ).to.equal('/srv/j');
  });
});
