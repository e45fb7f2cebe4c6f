// `tern systemd --user tern --out DIR`: units generated from the Procfile into a folder, valid
// for systemd (checked with `systemd-analyze verify` where the machine has it).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../../shared/paths.js';

function tern(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/cli/tern.ts', ...args], {
      env: { PATH: process.env.PATH, TERN_DATA_DIR: '/nonexistent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('tern systemd', function () {
  this.timeout(30_000);
  let dir: string;
  before(async () => (dir = await mkdtemp(join(tmpdir(), 'tern-systemd-'))));
  after(async () => rm(dir, { recursive: true, force: true }));

  it('writes one unit per Procfile process (web and worker templated), a target, an environment file and a README', async () => {
    const out = join(dir, 'units');
    const r = await tern(['systemd', '--user', 'tern', '--out', out, '--json']);
    expect(r.code, r.err).to.equal(0);
    const files = [
      'tern-web@.service',
      'tern-worker@.service',
      'tern-relay.service',
      'tern-mx.service',
      'tern-release.service',
      'tern.target',
      'tern.env',
      'README',
    ];
    expect(JSON.parse(r.out)).to.deep.equal({ out, files });
    expect((await readdir(out)).sort()).to.deep.equal([...files].sort());
    const root = packageRoot();
    const web = await readFile(join(out, 'tern-web@.service'), 'utf8');
    expect(web)
      .to.contain('User=tern\nGroup=tern')
      .and.to.contain(`WorkingDirectory=${root}`)
      .and.to.contain('EnvironmentFile=/etc/tern/tern.env\nEnvironment=PORT=%i')
      .and.to.contain(`ExecStart=${process.execPath} dist/api/http.js`)
      .and.to.contain('After=tern-release.service\nWants=tern-release.service')
      .and.to.contain('WantedBy=tern.target')
      // The journal's folder: persistent and the same for every unit, unlike its private /tmp.
      .and.to.contain('PrivateTmp=yes\nStateDirectory=tern\nStateDirectoryMode=0750');
    const release = await readFile(join(out, 'tern-release.service'), 'utf8');
    expect(release)
      .to.contain('Type=oneshot')
      .and.to.contain('dist/api/cli/tern.js migrate')
      .and.not.to.contain('[Install]');
    expect(await readFile(join(out, 'tern-mx.service'), 'utf8')).to.contain('AmbientCapabilities=CAP_NET_BIND_SERVICE');
    expect(await readFile(join(out, 'tern.target'), 'utf8')).to.contain(
      'Wants=tern-release.service tern-web@3000.service tern-worker@1.service tern-relay.service tern-mx.service',
    );
    const env = await readFile(join(out, 'tern.env'), 'utf8');
    expect(env)
      .to.match(/^SECRET_KEY=[A-Za-z0-9_-]{48}$/m)
      .and.to.match(/^DELIVERY_JOURNAL_DIR=\/var\/lib\/tern\/delivery-journal$/m)
      .and.not.to.match(/^PORT=/m);
    expect((await stat(join(out, 'tern.env'))).mode & 0o777).to.equal(0o600);
    expect(await readFile(join(out, 'README'), 'utf8'))
      .to.contain('systemctl enable --now tern.target')
      .and.to.contain('doctor');
    if (spawnSync('systemd-analyze', ['--version']).status === 0) {
      const units = files.filter((f) => f.endsWith('.service') || f.endsWith('.target')).map((f) => `./${f}`);
      const verify = spawnSync('systemd-analyze', ['verify', '--man=no', ...units], { cwd: out, encoding: 'utf8' });
      expect(verify.status, verify.stderr).to.equal(0);
      expect(verify.stderr).to.equal('');
    }
  });

  it('refuses a folder with files in it unless --force, and a bad user name (exit 2)', async () => {
    const out = join(dir, 'taken');
    await tern(['systemd', '--user', 'tern', '--out', out]);
    await writeFile(join(out, 'mine.txt'), 'keep');
    const again = await tern(['systemd', '--user', 'tern', '--out', out]);
    expect(again.code).to.equal(1);
    expect(again.err).to.contain('already has files');
    const forced = await tern(['systemd', '--user', 'mail', '--group', 'mail', '--out', out, '--force']);
    expect(forced.code, forced.err).to.equal(0);
    expect(await readFile(join(out, 'tern-mx.service'), 'utf8')).to.contain('User=mail');
    const bad = await tern(['systemd', '--user', 'Root; rm -rf /', '--out', join(dir, 'x')]);
    expect(bad.code).to.equal(2);
    expect(bad.err).to.contain('--user must be a system user or group name');
  });
});
