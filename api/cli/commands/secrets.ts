// `tern secrets rotate`: seals every webhook signing secret and DKIM private key with the current
// SECRET_KEY (shared/secrets-seal.ts). After SECRET_KEY changes, run it with the old key as
// SECRET_KEY_PREVIOUS; it also seals rows stored before secrets were sealed. It fails (exit 1)
// when some rows were sealed with a key it was not given, naming how many.
import { loadConfig } from '../../../shared/config.js';
import { sealStoredSecrets } from '../../../shared/secrets-seal.js';
import { secretBox } from '../../../shared/secrets.js';
import { CliError, type Command } from '../command.js';

const rotateCommand: Command = {
  name: 'secrets rotate',
  summary: 'seal every stored secret with SECRET_KEY (the old key in SECRET_KEY_PREVIOUS)',
  options: {
    json: { type: 'boolean', help: 'print {"key_id","sealed","unknown_key"}' },
  },
  async run(values, ctx) {
    const box = secretBox(loadConfig(ctx.env));
    const result = await sealStoredSecrets(ctx.sql(), box);
    if (values.json) ctx.json({ key_id: box.kid, sealed: result.sealed, unknown_key: result.unknownKey });
    else ctx.out(`${result.sealed} secret(s) sealed with key ${box.kid}.`);
    if (result.unknownKey > 0) {
      throw new CliError(
        `${result.unknownKey} secret(s) were sealed with another key: set it as SECRET_KEY_PREVIOUS and run this again`,
      );
    }
  },
};

export const secretsCommands: Command[] = [rotateCommand];
