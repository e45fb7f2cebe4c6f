// Compares a presented secret with the expected one in constant time. Both sides are hashed first,
// so that neither the content nor the length of the secret shows in the timing.
import { createHash, timingSafeEqual } from 'node:crypto';

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}
