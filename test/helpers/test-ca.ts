// A certificate authority for tests, made with openssl in a temporary directory: certificates it
// issues for given host names (trusted when the CA is), and self-signed ones (trusted by nobody).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface KeyPair {
  key: string;
  cert: string;
}

export interface TestCa {
  /** The CA's certificate (PEM), to trust. */
  cert: string;
  /** A certificate for `names` (subjectAltName DNS entries) signed by the CA. */
  issue(names: string[]): KeyPair;
  /** A self-signed certificate for `name`. */
  selfSigned(name: string): KeyPair;
  remove(): void;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

export function makeTestCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'tern-ca-'));
  openssl(
    dir,
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=Tern Test CA']
      .concat(['-keyout', 'ca.key', '-out', 'ca.crt', '-addext', 'basicConstraints=critical,CA:TRUE'])
      .concat(['-addext', 'keyUsage=critical,keyCertSign,cRLSign']),
  );
  let n = 0;
  const read = (name: string) => readFileSync(join(dir, name), 'utf8');
  return {
    cert: read('ca.crt'),
    issue(names) {
      const id = `leaf${n++}`;
      writeFileSync(join(dir, `${id}.ext`), `subjectAltName=${names.map((h) => `DNS:${h}`).join(',')}\n`);
      openssl(
        dir,
        ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${names[0]}`, '-keyout', `${id}.key`].concat([
          '-out',
          `${id}.csr`,
        ]),
      );
      openssl(
        dir,
        ['x509', '-req', '-in', `${id}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial'].concat([
          '-days',
          '2',
          '-extfile',
          `${id}.ext`,
          '-out',
          `${id}.crt`,
        ]),
      );
      return { key: read(`${id}.key`), cert: read(`${id}.crt`) };
    },
    selfSigned(name) {
      const id = `self${n++}`;
      openssl(
        dir,
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name}`].concat([
          '-addext',
          `subjectAltName=DNS:${name}`,
          '-keyout',
          `${id}.key`,
          '-out',
          `${id}.crt`,
        ]),
      );
      return { key: read(`${id}.key`), cert: read(`${id}.crt`) };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
