// The relay entry for bench/smtp: the bench harness gives a free port in PORT; the relay reads
// RELAY_PORT. Everything else is the real `relay` process.
process.env.RELAY_PORT = process.env.PORT;
await import('../../api/smtp/relay.js');
