// The relay's control headers, read before they are stripped from the message (DESIGN §10):
// `X-Tern-Tags: name=value, name2=value2` (the tags of POST /emails, same rules: names and values
// of 1-256 of A-Z a-z 0-9 _ -, at most 50) and `X-Tern-Kind: receipt` (1-64 characters, no
// control characters) and `X-Tern-Stream: broadcast` (the delivery stream, default transactional).
// Several X-Tern-Tags fields add up; two X-Tern-Kind or X-Tern-Stream fields are a mistake the
// client should hear about.
import { fieldsNamed, fieldValue, type HeaderBlock } from '../../shared/mail/header-block.js';
import { isStream, STREAMS, type Stream } from '../../shared/streams.js';
import { hasControl } from '../text-checks.js';
import { smtpErrors } from './relay-errors.js';

export interface ControlHeaders {
  tags: { name: string; value: string }[];
  kind: string | null;
  stream: Stream | null;
}

const TAG_TEXT = /^[A-Za-z0-9_-]{1,256}$/;
const MAX_TAGS = 50;
const MAX_KIND = 64;

function parseTags(value: string): { name: string; value: string }[] {
  if (value === '') return [];
  return value.split(',').map((item) => {
    const pair = item.trim();
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq).trim();
    const val = eq === -1 ? '' : pair.slice(eq + 1).trim();
    if (!TAG_TEXT.test(name) || !TAG_TEXT.test(val)) {
      throw smtpErrors.invalid(
        `X-Tern-Tags item ${JSON.stringify(pair)} must be name=value, each 1-256 of A-Z a-z 0-9 _ -`,
      );
    }
    return { name, value: val };
  });
}

export function readControlHeaders(raw: Buffer, block: HeaderBlock): ControlHeaders {
  const tags = fieldsNamed(block, (n) => n === 'x-tern-tags').flatMap((f) => parseTags(fieldValue(raw, f)));
  if (tags.length > MAX_TAGS) throw smtpErrors.invalid(`X-Tern-Tags names more than ${MAX_TAGS} tags`);
  const kinds = fieldsNamed(block, (n) => n === 'x-tern-kind').map((f) => fieldValue(raw, f));
  if (kinds.length > 1) throw smtpErrors.invalid('X-Tern-Kind is given more than once');
  const kind = kinds[0] ?? null;
  if (kind !== null && (kind.length === 0 || kind.length > MAX_KIND)) {
    throw smtpErrors.invalid(`X-Tern-Kind must be 1-${MAX_KIND} characters`);
  }
  // The kind travels into webhook payloads and metric labels, as the API's `kind` (format label).
  if (kind !== null && hasControl(kind)) throw smtpErrors.invalid('X-Tern-Kind must not contain control characters');
  return { tags, kind, stream: readStream(raw, block) };
}

function readStream(raw: Buffer, block: HeaderBlock): Stream | null {
  const values = fieldsNamed(block, (n) => n === 'x-tern-stream').map((f) => fieldValue(raw, f).trim().toLowerCase());
  if (values.length > 1) throw smtpErrors.invalid('X-Tern-Stream is given more than once');
  const value = values[0];
  if (value === undefined) return null;
  if (!isStream(value)) throw smtpErrors.invalid(`X-Tern-Stream must be one of ${STREAMS.join(', ')}`);
  return value;
}
