// systemd units for a plain Linux server, generated from the Procfile (docs/deployment.md): one
// unit per process; `web` and `worker` as templates so that an operator scales them with more
// instances (`tern-web@3001`, `tern-worker@2`); `release` as a oneshot that every other unit
// waits for; one target that starts the whole formation; one EnvironmentFile for all of them.

export interface ProcfileEntry {
  name: string;
  command: string;
}

export interface UnitOptions {
  user: string;
  group: string;
  /** The install (package root) the processes run in. */
  root: string;
  /** The node binary, absolute. */
  node: string;
  /** Where the units read their environment. */
  envFile: string;
}

export interface UnitFile {
  name: string;
  text: string;
}

/** Processes scaled on one host with templated units (`@<port>` for web, `@<n>` for worker). */
const TEMPLATED = new Set(['web', 'worker']);
/**
 * The units' persistent state (StateDirectory=tern: created owned by the unit's user, writable
 * under ProtectSystem=strict, kept across restarts and reboots, the same folder for every unit):
 * the delivery journal lives here, where a takeover by another unit can read it (PrivateTmp gives
 * each unit a /tmp of its own).
 */
export const STATE_DIR = '/var/lib/tern';

/** Processes that bind a port below 1024 in production (SMTP 25, 465, 587). */
const PRIVILEGED_PORTS = new Set(['relay', 'mx']);

export function parseProcfile(text: string): ProcfileEntry[] {
  const entries: ProcfileEntry[] = [];
  for (const raw of text.split('\n')) {
    const m = /^([a-z][a-z0-9_-]*):\s*(.+)$/.exec(raw.trim());
    if (m) entries.push({ name: m[1]!, command: m[2]!.trim() });
  }
  return entries;
}

/** `node dist/x.js` runs with the given node binary (systemd wants an absolute path). */
function execLine(command: string, node: string): string {
  return command.replace(/^node(\s)/, `${node}$1`);
}

function unitName(e: ProcfileEntry, brand = 'tern'): string {
  if (e.name === 'release') return `${brand}-release.service`;
  return TEMPLATED.has(e.name) ? `${brand}-${e.name}@.service` : `${brand}-${e.name}.service`;
}

/** The instances the target starts: one of each, web on port 3000. */
function instanceOf(e: ProcfileEntry, brand = 'tern'): string {
  if (e.name === 'web') return `${brand}-web@3000.service`;
  if (e.name === 'worker') return `${brand}-worker@1.service`;
  return `${brand}-${e.name}.service`;
}

function serviceUnit(e: ProcfileEntry, o: UnitOptions): string {
  const oneshot = e.name === 'release';
  const description =
    e.name === 'web'
      ? 'Tern web (HTTP API, console, tracking) on port %i'
      : e.name === 'worker'
        ? 'Tern worker %i (queues)'
        : oneshot
          ? 'Tern release (database migrations)'
          : `Tern ${e.name}`;
  const lines = [
    '[Unit]',
    `Description=${description}`,
    'After=network-online.target postgresql.service redis-server.service',
    'Wants=network-online.target',
  ];
  if (!oneshot) lines.push('After=tern-release.service', 'Wants=tern-release.service', 'PartOf=tern.target');
  lines.push(
    '',
    '[Service]',
    `Type=${oneshot ? 'oneshot' : 'simple'}`,
    `User=${o.user}`,
    `Group=${o.group}`,
    `WorkingDirectory=${o.root}`,
    `EnvironmentFile=${o.envFile}`,
  );
  // Environment= yields to EnvironmentFile=, so PORT stays out of the environment file.
  if (e.name === 'web') lines.push('Environment=PORT=%i');
  lines.push(`ExecStart=${execLine(e.command, o.node)}`);
  if (!oneshot) {
    lines.push(
      'Restart=always',
      'RestartSec=2',
      // First SIGTERM: stop intake, finish work in flight (two-stage shutdown); then SIGKILL.
      'KillSignal=SIGTERM',
      'TimeoutStopSec=60',
      'LimitNOFILE=65536',
    );
  }
  if (PRIVILEGED_PORTS.has(e.name)) lines.push('AmbientCapabilities=CAP_NET_BIND_SERVICE');
  lines.push(
    'StandardOutput=journal',
    'StandardError=journal',
    `SyslogIdentifier=tern-${e.name}`,
    'NoNewPrivileges=yes',
    'PrivateTmp=yes',
    `StateDirectory=${STATE_DIR.replace('/var/lib/', '')}`,
    'StateDirectoryMode=0750',
    'ProtectSystem=strict',
    'ProtectHome=yes',
    // The relay keeps a self-signed certificate here when RELAY_TLS_CERT is unset.
    `ReadWritePaths=-${o.root}/.data`,
  );
  if (!oneshot) lines.push('', '[Install]', 'WantedBy=tern.target');
  return `${lines.join('\n')}\n`;
}

function targetUnit(entries: ProcfileEntry[]): string {
  const wants = entries.filter((e) => e.name !== 'release').map((e) => instanceOf(e));
  return [
    '[Unit]',
    'Description=Tern (every process of the Procfile)',
    `Wants=tern-release.service ${wants.join(' ')}`,
    'After=tern-release.service',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/** The environment file: every production setting, with a fresh SECRET_KEY. */
export function environmentFile(secretKey: string): string {
  return `# Tern's environment for every unit (docs/configuration.md lists each variable).
# Keep this file readable by root only: chmod 600. PORT is set per web instance by its unit.
NODE_ENV=production
DATABASE_URL=postgres://tern:CHANGE-ME@127.0.0.1:5432/tern
DATABASE_POOL_MAX=10
REDIS_URL=redis://127.0.0.1:6379
SECRET_KEY=${secretKey}
BASE_URL=https://mail.example.com
MX_HOST=mail.example.com
HELO_NAME=mail.example.com
RELAY_PORT=587
RELAY_TLS_PORT=465
MX_PORT=25
RELAY_TLS_CERT=/etc/letsencrypt/live/mail.example.com/fullchain.pem
RELAY_TLS_KEY=/etc/letsencrypt/live/mail.example.com/privkey.pem
MX_TLS_CERT=/etc/letsencrypt/live/mail.example.com/fullchain.pem
MX_TLS_KEY=/etc/letsencrypt/live/mail.example.com/privkey.pem
# SMTP_SMARTHOST=smtp://user:password@smtp.provider.example:587
# The units' StateDirectory: persistent and shared by every unit (not /tmp, which is private per unit).
DELIVERY_JOURNAL_DIR=${STATE_DIR}/delivery-journal
LOG_LEVEL=info
`;
}

export function readme(o: UnitOptions, files: string[]): string {
  return `Tern systemd units, generated by \`tern systemd\`. Review them, then install:

  install -d -m 700 ${o.envFile.replace(/\/[^/]+$/, '')}
  install -m 600 tern.env ${o.envFile}        # edit it first: DATABASE_URL, BASE_URL, MX_HOST, certificates
  cp ${files.filter((f) => f.endsWith('.service') || f.endsWith('.target')).join(' ')} /etc/systemd/system/
  systemctl daemon-reload
  systemctl enable --now tern.target          # runs tern-release (migrations) first, then every process

Scale on this host: systemctl enable --now tern-web@3001 tern-worker@2 (each web instance listens on
its instance number as PORT; put them behind one reverse proxy).
Deploy a new version: update ${o.root} (npm ci && npm run build), then
  systemctl start tern-release && systemctl restart tern.target
Logs: journalctl -u 'tern-*' -f
Then check the install, with the units' environment:
  sudo -u ${o.user} sh -c 'set -a; . ${o.envFile}; cd ${o.root} && node dist/api/cli/tern.js doctor'
`;
}

export function generateUnits(entries: ProcfileEntry[], o: UnitOptions): UnitFile[] {
  const units = entries.map((e) => ({ name: unitName(e), text: serviceUnit(e, o) }));
  return [...units, { name: 'tern.target', text: targetUnit(entries) }];
}
