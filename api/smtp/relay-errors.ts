// SMTP replies of the relay (DESIGN §10). smtp-server answers an error with `responseCode` and
// the message; the relay hides ENHANCEDSTATUSCODES from smtp-server's own mapping (which would
// print 550 as 5.1.1 and 451 as 4.3.0) and writes the enhanced code itself, first in the text.
import { ApiError } from '../../shared/errors.js';

export class SmtpError extends Error {
  constructor(
    readonly responseCode: number,
    readonly enhancedCode: string,
    readonly text: string,
  ) {
    super(`${enhancedCode} ${text}`);
    this.name = 'SmtpError';
  }
}

export const smtpErrors = {
  authFailed: () => new SmtpError(535, '5.7.8', 'Authentication credentials invalid'),
  authRequired: () => new SmtpError(530, '5.7.0', 'Authentication required'),
  forbiddenDomain: (why: string) => new SmtpError(550, '5.7.1', why),
  paused: (why: string | null) =>
    new SmtpError(451, '4.7.1', `Sending is paused for this organization${why ? `: ${why}` : ''}; try again later`),
  rateLimited: (retryAfter: number) =>
    new SmtpError(451, '4.7.1', `Rate limit exceeded for this key; try again in ${retryAfter} s`),
  tooBig: (max: number) => new SmtpError(552, '5.3.4', `Message size exceeds fixed maximum message size ${max}`),
  invalid: (why: string) => new SmtpError(554, '5.6.0', `Invalid message: ${why}`),
  badRecipient: (why: string) => new SmtpError(553, '5.1.3', why),
  badSender: (why: string) => new SmtpError(553, '5.1.7', why),
  tooManyRecipients: (max: number) => new SmtpError(452, '4.5.3', `Too many recipients (at most ${max})`),
  temporary: () => new SmtpError(451, '4.3.0', 'Temporary failure, try again later'),
  unconfirmed: () =>
    new SmtpError(
      451,
      '4.3.0',
      'The message may have been stored (storage could not be confirmed); send it again, it will be stored once',
    ),
};

/** The SMTP reply of an ApiError raised by the sending rules shared with POST /emails. */
export function fromApiError(err: ApiError): SmtpError {
  switch (err.code) {
    case 'forbidden_domain':
    case 'validation_error':
    case 'unknown_domain':
    case 'demo_domain':
      // A sender the key may not use (another domain, or one not verified): a policy refusal.
      return smtpErrors.forbiddenDomain(err.message);
    case 'sending_paused':
      return smtpErrors.paused(null);
    case 'rate_limited':
      return smtpErrors.rateLimited(1);
    default:
      return smtpErrors.temporary();
  }
}
