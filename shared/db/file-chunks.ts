// Files kept in Postgres as numbered chunks of about 1 MiB (sql/000401_contact_imports.sql): an
// uploaded import and a generated export. Any web or worker process reads what another wrote,
// and a restart loses nothing; a reader holds one chunk in memory at a time.
import type { Db } from './pool.js';

/** Size of the chunks writers cut (the last one of a file may be shorter). */
export const CHUNK_BYTES = 1024 * 1024;

export async function insertChunk(db: Db, orgId: string, ownerId: string, seq: number, data: Buffer): Promise<void> {
  await db`insert into file_chunks (owner_id, seq, org_id, data) values (${ownerId}, ${seq}, ${orgId}, ${data})`;
}

/** The file's bytes in order, one chunk per query. */
export async function* readChunks(db: Db, ownerId: string, count: number): AsyncGenerator<Buffer> {
  for (let seq = 0; seq < count; seq++) {
    const [row] = await db<{ data: Buffer }[]>`
      select data from file_chunks where owner_id = ${ownerId} and seq = ${seq}`;
    if (!row) throw new Error(`file ${ownerId}: chunk ${seq} of ${count} is missing`);
    yield row.data;
  }
}

/**
 * Cuts a stream of buffers into CHUNK_BYTES pieces and hands each to `write` in order (seq 0, 1,
 * …); returns the number of chunks and bytes written. At most one chunk is held at a time.
 */
export async function writeChunked(
  source: AsyncIterable<Buffer>,
  write: (seq: number, data: Buffer) => Promise<void>,
  onBytes: (chunk: Buffer) => void = () => {},
): Promise<{ chunks: number; bytes: number }> {
  let parts: Buffer[] = [];
  let held = 0;
  let seq = 0;
  let bytes = 0;
  for await (const piece of source) {
    onBytes(piece);
    bytes += piece.length;
    parts.push(piece);
    held += piece.length;
    while (held >= CHUNK_BYTES) {
      const all = Buffer.concat(parts, held);
      await write(seq++, all.subarray(0, CHUNK_BYTES));
      parts = held > CHUNK_BYTES ? [all.subarray(CHUNK_BYTES)] : [];
      held -= CHUNK_BYTES;
    }
  }
  if (held > 0) await write(seq++, Buffer.concat(parts, held));
  return { chunks: seq, bytes };
}
