// The receiving server of bench/fairness, in a process of its own (so that the process measuring
// B's latency never shares an event loop with the load): accepts every message on PORT and prints
// one line per recipient, `250 <address> <epoch ms>`, when it answers DATA. Prints "ready" once
// listening; SIGTERM closes it.
import { SMTPServer } from 'smtp-server';

const now = () => performance.timeOrigin + performance.now();
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  logger: false,
  maxClients: 1000,
  onData(stream, session, cb) {
    stream.resume();
    stream.on('end', () => {
      const at = now().toFixed(1);
      process.stdout.write(session.envelope.rcptTo.map((r) => `250 ${r.address.toLowerCase()} ${at}\n`).join(''));
      cb(null, 'Ok: queued');
    });
  },
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
