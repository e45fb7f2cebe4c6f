// Domain names are stored lower-case and in ASCII (IDNs as punycode A-labels).
import { domainToASCII } from 'node:url';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** The normalised name, or null when `input` is not a valid domain name with at least two labels. */
export function normalizeDomainName(input: string): string | null {
  const trimmed = input.trim().replace(/\.$/, '');
  if (trimmed === '' || trimmed.length > 253) return null;
  const ascii = domainToASCII(trimmed.toLowerCase());
  if (!ascii || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return null;
  if (/^\d+$/.test(labels[labels.length - 1]!)) return null; // an IP address, not a domain
  return ascii;
}
