import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestPki {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** A throwaway CA with a server certificate for 127.0.0.1/localhost and a client certificate (openssl CLI). */
export function makeTestPki(dir: string): TestPki {
  const f = (name: string) => join(dir, name);
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=storctl-test-ca',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
  ]);
  const issue = (name: string, subject: string, ext: string) => {
    writeFileSync(f(`${name}.ext`), ext);
    openssl([
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      subject,
      '-keyout',
      f(`${name}.key`),
      '-out',
      f(`${name}.csr`),
    ]);
    openssl([
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.pem'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      f(`${name}.ext`),
      '-out',
      f(`${name}.pem`),
    ]);
  };
  issue(
    'server',
    '/CN=127.0.0.1',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n',
  );
  issue('client', '/CN=storctl-test-client', 'extendedKeyUsage=clientAuth\n');
  return {
    ca: f('ca.pem'),
    serverCert: f('server.pem'),
    serverKey: f('server.key'),
    clientCert: f('client.pem'),
    clientKey: f('client.key'),
  };
}
