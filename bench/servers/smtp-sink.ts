// The SMTP sink of bench/delivery: accepts every message on PORT (no AUTH, no TLS) and drops it.
import { SMTPServer } from 'smtp-server';

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  logger: false,
  maxClients: 1000,
  onData(stream, _session, cb) {
    stream.on('end', () => cb());
    stream.resume();
  },
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
