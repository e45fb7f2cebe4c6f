// Messages built to hang a MIME parser: thousands of small parts (past mailparser's child-node
// limit of 1000 its parse never settles).
/** A multipart of `parts` small text attachments: about 200 bytes a part. */
export function partsBomb(to: string, parts: number): string {
  const head = `From: Someone <someone@example.net>\r\nTo: ${to}\r\nSubject: many parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n`;
  const body = Array.from(
    { length: parts },
    (_, i) =>
      `--b\r\nContent-Type: text/plain; name="a${i}.txt"\r\nContent-Disposition: attachment; filename="a${i}.txt"\r\n\r\n${'y'.repeat(100)}\r\n`,
  );
  return `${head}${body.join('')}--b--\r\n`;
}
