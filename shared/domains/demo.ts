// The demo domain of the development launcher (DESIGN §12): `npm start` creates it verified in
// the Demo organization so that a test key can send at once. It never leaves the machine: a live
// send from it is refused wherever a message is accepted (API, batch, broadcasts, automations,
// SMTP relay) and, should one ever be stored, the delivery worker fails it instead of sending.
import { ApiError } from '../errors.js';

export const DEMO_DOMAIN = 'demo.test';

/** What a live send from the demo domain is told (the API's 422 and the relay's 550). */
export function demoDomainMessage(name: string): string {
  return (
    `${name} is the demo domain: it never leaves this machine, so only test keys send from it. ` +
    'To send real mail, add a domain you own (POST /api/v1/domains, or the console) and send from it.'
  );
}

/** 422 demo_domain when a live message would leave from a demo domain. */
export function assertNotDemoLive(domain: { name: string; demo?: boolean }, mode: 'live' | 'test'): void {
  if (domain.demo && mode === 'live') throw new ApiError('demo_domain', demoDomainMessage(domain.name));
}
