// Tern's MX entry (api/smtp/mx) on the PORT the bench harness chose.
process.env.MX_PORT = process.env.PORT;
await import('../../api/smtp/mx.js');
