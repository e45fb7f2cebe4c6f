// The new part of a reply (`stripped_text`): the text without the quoted history and the
// signature. What mail clients write, cut at the first of:
//   Gmail, Apple Mail, Thunderbird: "On <date>, <name> wrote:" (also wrapped on two lines, and
//     the common translations: "Le … a écrit :", "Am … schrieb …:", "El … escribió:");
//   Outlook: "-----Original Message-----", a line of underscores, or a "From: … / Sent: …" block
//     (also bold, "*From:*", as Outlook writes it in plain text);
//   a trailing block of "> " quoted lines (interleaved quotes are dropped, the answers kept);
//   the signature delimiter "-- " (RFC 3676 §4.3), and "Sent from my …" device footers.

const MAX_LINES = 20_000;

const WROTE_ONE_LINE = [
  /^On\b.{0,300}\bwrote:\s*$/i,
  /^Le\b.{0,300}\ba écrit\s*:\s*$/i,
  /^Am\b.{0,300}\bschrieb\b.{0,200}:\s*$/i,
  /^El\b.{0,300}\bescribió:\s*$/i,
];
const OUTLOOK_SEPARATOR = /^\s*(-{2,}\s*Original Message\s*-{2,}|_{20,})\s*$/i;
const HEADER_FROM = /^\s*\*?From:\*?\s+\S/i;
const HEADER_NEXT = /^\s*\*?(Sent|Date|To|Subject|Cc):\*?\s/i;
const SIGNATURE = /^-- ?$/;
const DEVICE_FOOTER = /^(Sent from my |Get Outlook for )/i;

function startsHistory(lines: string[], i: number): boolean {
  const line = lines[i]!.trim();
  if (WROTE_ONE_LINE.some((re) => re.test(line))) return true;
  // Gmail wraps a long attribution: "On Mon, 3 Mar 2025 at 10:00, Someone Long <x@y>\nwrote:".
  const next = lines[i + 1]?.trim() ?? '';
  if (/^On\b/i.test(line) && /^.{0,200}\bwrote:\s*$/i.test(next) && line.length + next.length < 400) return true;
  if (OUTLOOK_SEPARATOR.test(line)) return true;
  if (HEADER_FROM.test(line)) {
    // A header block: From: followed within a few lines by Sent:/Date:/To:/Subject:.
    return lines.slice(i + 1, i + 5).some((l) => HEADER_NEXT.test(l));
  }
  return false;
}

function isQuote(line: string): boolean {
  return /^\s*>/.test(line);
}

/** The reply without quoted history and signature; '' when nothing new is left. */
export function stripReply(text: string): string {
  let lines = text.replace(/\r\n?/g, '\n').split('\n').slice(0, MAX_LINES);
  const cut = lines.findIndex((_, i) => startsHistory(lines, i) || SIGNATURE.test(lines[i]!));
  if (cut >= 0) lines = lines.slice(0, cut);
  // A trailing quote block goes whole; quotes between answers (inline replies) go line by line.
  let end = lines.length;
  while (end > 0 && (isQuote(lines[end - 1]!) || lines[end - 1]!.trim() === '')) end--;
  lines = lines.slice(0, end).filter((l) => !isQuote(l));
  while (lines.length > 0 && (lines[lines.length - 1]!.trim() === '' || DEVICE_FOOTER.test(lines.at(-1)!.trim()))) {
    lines.pop();
  }
  while (lines.length > 0 && lines[0]!.trim() === '') lines.shift();
  return lines.map((l) => l.trimEnd()).join('\n');
}
