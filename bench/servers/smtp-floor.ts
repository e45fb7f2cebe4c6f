// The floor of bench/smtp: a bare smtp-server on PORT that offers STARTTLS, accepts any AUTH (or
// none) and any message (read to its end and dropped): the protocol work without any of Tern's.
import { SMTPServer } from 'smtp-server';
import { selfSignedCertificate } from '../../api/smtp/relay-tls.js';

const tls = await selfSignedCertificate('localhost');
const server = new SMTPServer({
  ...tls,
  logger: false,
  authOptional: true,
  authMethods: ['PLAIN', 'LOGIN'],
  onAuth(auth, _session, cb) {
    cb(null, { user: auth.username });
  },
  onData(stream, _session, cb) {
    stream.on('end', () => cb(null, 'Ok: queued'));
    stream.resume();
  },
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
