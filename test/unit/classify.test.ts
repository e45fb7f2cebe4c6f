// Real-world replies (wording after each provider's published reply-code documentation) and
// the outcome DESIGN §6 asks for. Each row goes through parseReply and classifyReply.
import { expect } from 'chai';
import {
  classifyConnectionError,
  classifyReply,
  classifySmtpError,
  parseReply,
  type ReplyClassification,
} from '../../shared/mail/classify.js';

type Expect = [
  outcome: ReplyClassification['outcome'],
  bounceType: string | undefined,
  detail: string,
  flags?: 'B' | 'BT',
];
const HARD_NOEMAIL: Expect = ['bounced', 'hard', 'NoEmail'];
const HARD_GENERAL: Expect = ['bounced', 'hard', 'General'];

const TABLE: [source: string, raw: string, expected: Expect][] = [
  // Gmail
  ['gmail accepted', '250 2.0.0 OK  1717171717 a1si123456qkb.12 - gsmtp', ['delivered', undefined, '']],
  [
    'gmail no such user (multi-line)',
    "550-5.1.1 The email account that you tried to reach does not exist. Please try\r\n550-5.1.1 double-checking the recipient's email address for typos or\r\n550-5.1.1 unnecessary spaces. Learn more at\r\n550 5.1.1  https://support.google.com/mail/?p=NoSuchUser a1si123456qkb.12 - gsmtp",
    HARD_NOEMAIL,
  ],
  [
    'gmail account disabled',
    '550-5.2.1 The email account that you tried to reach is disabled. Learn more at\n550 5.2.1  https://support.google.com/mail/?p=DisabledUser x12si - gsmtp',
    HARD_GENERAL,
  ],
  [
    'gmail over quota (temporary)',
    '452-4.2.2 The email account that you tried to reach is over quota. Please direct\n452-4.2.2 the recipient to\n452 4.2.2  https://support.google.com/mail/?p=OverQuotaTemp b2si - gsmtp',
    ['deferred', undefined, 'MailboxFull'],
  ],
  [
    'gmail over quota (permanent)',
    '552-5.2.2 The email account that you tried to reach is over quota and inactive.\n552 5.2.2  https://support.google.com/mail/?p=OverQuotaPerm c3si - gsmtp',
    ['bounced', 'soft', 'MailboxFull'],
  ],
  [
    'gmail message too large',
    "552-5.3.4 Your message exceeded Google's message size limits. Please visit\n552 5.3.4  https://support.google.com/mail/?p=MaxSizeError d4si - gsmtp",
    ['bounced', 'soft', 'MessageTooLarge'],
  ],
  [
    'gmail receiving too quickly',
    '450-4.2.1 The user you are trying to contact is receiving mail too quickly. Please\n450 4.2.1  resend your message at a later time. https://support.google.com/mail/?p=ReceivingRate - gsmtp',
    ['deferred', undefined, 'RecipientServerError'],
  ],
  [
    'gmail unsolicited rate from IP (4.7.0)',
    '421-4.7.0 [192.0.2.10      15] Our system has detected an unusual rate of\n421-4.7.0 unsolicited mail originating from your IP address. To protect our\n421-4.7.0 users from spam, mail sent from your IP address has been temporarily\n421 4.7.0 rate limited. https://support.google.com/mail/?p=UnsolicitedRateLimitError - gsmtp',
    ['deferred', undefined, 'IPFailure', 'BT'],
  ],
  [
    'gmail 4.7.28 rate limited',
    '421-4.7.28 Gmail has detected an unusual rate of unsolicited mail from your IP\n421 4.7.28 address. https://support.google.com/mail/?p=UnsolicitedIPError - gsmtp',
    ['deferred', undefined, 'IPFailure', 'BT'],
  ],
  [
    'gmail likely unsolicited, blocked',
    '550-5.7.1 [192.0.2.10] Our system has detected that this message is likely\n550-5.7.1 unsolicited mail. To reduce the amount of spam sent to Gmail, this\n550 5.7.1 message has been blocked. https://support.google.com/mail/?p=UnsolicitedMessageError - gsmtp',
    ['bounced', 'soft', 'ContentRejected', 'B'],
  ],
  [
    'gmail DMARC unauthenticated',
    "550-5.7.26 Unauthenticated email from example.com is not accepted due to domain's\n550 5.7.26 DMARC policy. https://support.google.com/mail/?p=DmarcRejection - gsmtp",
    ['bounced', 'soft', 'ContentRejected'],
  ],
  [
    'gmail SPF fail',
    '550-5.7.27 The sender does not pass SPF authentication checks.\n550 5.7.27 https://support.google.com/mail/?p=RfcAuthError - gsmtp',
    ['bounced', 'soft', 'ContentRejected'],
  ],
  [
    'gmail no PTR',
    '550-5.7.25 [192.0.2.10] The IP address sending this message does not have a\n550 5.7.25 PTR record setup. https://support.google.com/mail/?p=ReverseDNS - gsmtp',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  [
    'gmail blocked attachment',
    '552-5.7.0 This message was blocked because its content presents a potential\n552-5.7.0 security issue. To review our message content and attachment content\n552 5.7.0 guidelines, go to https://support.google.com/mail/?p=BlockedMessage - gsmtp',
    ['bounced', 'soft', 'AttachmentRejected'],
  ],
  [
    'gmail temporary system problem',
    '451-4.3.0 Mail server temporarily rejected message.\n451 4.3.0 https://support.google.com/mail/?p=TempFail - gsmtp',
    ['deferred', undefined, 'RecipientServerError'],
  ],
  [
    'gmail malformed message',
    '554 5.6.0 Mail message is malformed. Not accepted. https://support.google.com/mail/?p=RfcMessageNonCompliant - gsmtp',
    ['bounced', 'soft', 'ContentRejected'],
  ],
  // Outlook.com / Office 365 / Exchange Online
  [
    'exchange online recipient not found',
    '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
    HARD_NOEMAIL,
  ],
  [
    'exchange online directory-based edge block',
    '550 5.4.1 Recipient address rejected: Access denied. AS(201806281) [AM0PR01MB1234.eurprd01.prod.exchangelabs.com]',
    HARD_NOEMAIL,
  ],
  [
    'outlook.com mailbox unavailable',
    '550 5.5.0 Requested action not taken: mailbox unavailable (S2017062302). [DB5EUR03FT012.eop-EUR03.prod.protection.outlook.com]',
    HARD_NOEMAIL,
  ],
  [
    'outlook.com S3150 block list',
    "550 5.7.1 Unfortunately, messages from [192.0.2.10] weren't sent. Please contact your Internet service provider since part of their network is on our block list (S3150). You can also refer your provider to http://mail.live.com/mail/troubleshooting.aspx#errors. [AM1EUR02FT004.eop-EUR02.prod.protection.outlook.com]",
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  [
    'office 365 blocked using Spamhaus',
    '550 5.7.1 Service unavailable, Client host [192.0.2.10] blocked using Spamhaus. To request removal from this list see https://www.spamhaus.org/query/ip/192.0.2.10 (AS3130). [BN8NAM11FT052.eop-nam11.prod.protection.outlook.com]',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  [
    'office 365 banned sending IP',
    '550 5.7.606 Access denied, banned sending IP [192.0.2.10]. To request removal from this list please visit https://sender.office.com/ and follow the directions. For more information please go to http://go.microsoft.com/fwlink/?LinkID=526655 AS(1430)',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  [
    'office 365 tenant over threshold',
    '550 5.7.708 Access denied, traffic not accepted from this IP. For more information please go to http://go.microsoft.com/fwlink/?LinkId=526653 AS(7230)',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  [
    'office 365 throttled (4.7.500)',
    '451 4.7.500 Server busy. Please try again later from [192.0.2.10]. (S77719) [BN8NAM11FT066.eop-nam11.prod.protection.outlook.com]',
    ['deferred', undefined, 'IPFailure', 'BT'],
  ],
  [
    'office 365 rate limited by reputation (4.7.650)',
    '451 4.7.650 The mail server [192.0.2.10] has been temporarily rate limited due to IP reputation. For e-mail delivery information, see https://postmaster.live.com (S775) [Name=Protocol Filter Agent][AGT=PFA][MxId=11BB12345678]',
    ['deferred', undefined, 'IPFailure', 'BT'],
  ],
  [
    'outlook.com RP-001 hourly limit',
    "421 RP-001 (BAY004-MC1F41) Unfortunately, some messages from 192.0.2.10 weren't sent. Please try again. We have limits for how many messages can be sent per hour and per day. You can also refer to http://mail.live.com/mail/troubleshooting.aspx#errors.",
    ['deferred', undefined, 'IPFailure', 'BT'],
  ],
  [
    'exchange online mailbox full',
    '554 5.2.2 mailbox full; STOREDRV.Deliver.Exception:QuotaExceededException.MapiExceptionShutoffQuotaExceeded; Failed to process message due to a permanent exception',
    ['bounced', 'soft', 'MailboxFull'],
  ],
  [
    'exchange online DMARC reject',
    '550 5.7.509 Access denied, sending domain EXAMPLE.COM does not pass DMARC verification and has a DMARC policy of reject.',
    ['bounced', 'soft', 'ContentRejected'],
  ],
  [
    'exchange online group requires authenticated senders',
    '550 5.7.133 RESOLVER.RST.SenderNotAuthenticatedForGroup; authentication required; Delivery restriction check failed as sender not authenticated',
    ['bounced', 'soft', 'General'],
  ],
  // Exchange (on-premises)
  ['exchange on-prem user unknown', '550 5.1.1 User unknown', HARD_NOEMAIL],
  ['exchange on-prem RecipNotFound', '550 5.1.1 RESOLVER.ADR.RecipNotFound; not found', HARD_NOEMAIL],
  [
    'exchange on-prem not authorized',
    '550 5.7.1 RESOLVER.RST.NotAuthorized; not authorized',
    ['bounced', 'soft', 'General'],
  ],
  [
    'exchange on-prem size limit',
    '552 5.3.4 Message size exceeds fixed maximum message size',
    ['bounced', 'soft', 'MessageTooLarge'],
  ],
  [
    'exchange on-prem resources',
    '452 4.3.1 Insufficient system resources',
    ['deferred', undefined, 'RecipientServerError'],
  ],
  ['exchange on-prem bad sender', '550 5.1.8 Access denied, bad outbound sender', ['bounced', 'soft', 'General']],
  // Yahoo / AOL
  [
    'yahoo no account',
    "554 delivery error: dd This user doesn't have a yahoo.com account (someone@yahoo.com) [0] - mta1234.mail.gq1.yahoo.com",
    HARD_NOEMAIL,
  ],
  [
    'yahoo mailbox disabled',
    '554 delivery error: dd Sorry your message to someone@yahoo.com cannot be delivered. This mailbox is disabled (554.30). - mta4321.mail.bf1.yahoo.com',
    HARD_GENERAL,
  ],
  ['aol mailbox not found', '552 1 Requested mail action aborted, mailbox not found', HARD_NOEMAIL],
  [
    'yahoo TSS04 deferral',
    '421 4.7.0 [TSS04] Messages from 192.0.2.10 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes',
    ['deferred', undefined, 'IPFailure', 'BT'],
  ],
  [
    'yahoo TS03 permanent deferral',
    '421 4.7.1 [TS03] All messages from 192.0.2.10 will be permanently deferred; Retrying will NOT succeed. See https://postmaster.yahooinc.com/error-codes',
    ['deferred', undefined, 'IPFailure', 'B'],
  ],
  [
    'yahoo BL21 Spamhaus',
    "553 5.7.1 [BL21] Connections will not be accepted from 192.0.2.10, because the ip is in Spamhaus's list; see https://postmaster.yahooinc.com/error-codes",
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  [
    'yahoo PH01 policy',
    '554 5.7.9 [PH01] Email not accepted for policy reasons. Please visit https://postmaster.yahooinc.com/error-codes',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  [
    'yahoo unauthenticated sender',
    '550 5.7.9 This mail has been blocked because the sender is unauthenticated. Yahoo requires all senders to authenticate with either SPF or DKIM.',
    ['bounced', 'soft', 'ContentRejected'],
  ],
  [
    'yahoo policy reasons',
    '554 5.7.9 Message not accepted for policy reasons.  See https://postmaster.yahooinc.com/error-codes',
    ['bounced', 'soft', 'ContentRejected'],
  ],
  // iCloud
  ['icloud user does not exist', '550 5.1.1 <someone@icloud.com>: user does not exist', HARD_NOEMAIL],
  ['icloud over quota', '552 5.2.2 <someone@icloud.com>: user is over quota', ['bounced', 'soft', 'MailboxFull']],
  [
    'icloud CS01 local policy',
    '554 5.7.1 [CS01] Message rejected due to local policy. Please visit https://support.apple.com/en-us/HT204137',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  [
    'icloud HM08 local policy',
    '554 5.7.1 [HM08] Message rejected due to local policy. Please visit https://support.apple.com/en-us/HT204137',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  [
    'icloud proofpoint dnsbl',
    '550 5.7.0 Blocked - see https://support.proofpoint.com/dnsbl-lookup.cgi?ip=192.0.2.10',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  // Postfix
  [
    'postfix virtual user unknown',
    '550 5.1.1 <x@y.example>: Recipient address rejected: User unknown in virtual mailbox table',
    HARD_NOEMAIL,
  ],
  [
    'postfix local user unknown (soft_bounce)',
    '450 4.1.1 <x@y.example>: Recipient address rejected: User unknown in local recipient table',
    ['deferred', undefined, 'RecipientServerError'],
  ],
  [
    'postfix greylisted (postgrey)',
    '450 4.2.0 <x@y.example>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/y.example.html',
    ['deferred', undefined, 'RecipientServerError'],
  ],
  [
    'postfix blocked using zen.spamhaus.org',
    '554 5.7.1 Service unavailable; Client host [192.0.2.10] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/192.0.2.10',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  ['postfix size limit', '552 5.3.4 Message size exceeds fixed limit', ['bounced', 'soft', 'MessageTooLarge']],
  ['postfix relay denied', '554 5.7.1 <x@y.example>: Relay access denied', ['bounced', 'soft', 'General']],
  [
    'postfix no hostname for client',
    '450 4.7.1 Client host rejected: cannot find your hostname, [192.0.2.10]',
    ['deferred', undefined, 'IPFailure', 'B'],
  ],
  [
    'postfix SPF fail under recipient words',
    '550 5.7.23 <x@y.example>: Recipient address rejected: Message rejected due to: SPF fail - not authorized.',
    ['bounced', 'soft', 'ContentRejected'],
  ],
  ['postfix storage', '452 4.3.1 Insufficient system storage', ['deferred', undefined, 'RecipientServerError']],
  ['postfix content filter spam', '554 5.7.1 Spam message rejected', ['bounced', 'soft', 'ContentRejected']],
  // Exim (cPanel and Debian defaults send no enhanced code)
  ['exim unrouteable address', '550 Unrouteable address', HARD_GENERAL],
  ['exim no such user', '550 No Such User Here', HARD_NOEMAIL],
  [
    'exim sender verify (multi-line)',
    '550-Verification failed for <bounce@sender.example>\n550-Called:   192.0.2.20\n550-Sent:     RCPT TO:<bounce@sender.example>\n550-Response: 550 5.1.1 User unknown\n550 Sender verify failed',
    ['bounced', 'soft', 'General'],
  ],
  [
    'exim DNSBL',
    '550 Rejected because 192.0.2.10 is in a black list at zen.spamhaus.org',
    ['bounced', 'soft', 'IPFailure', 'B'],
  ],
  ['exim size', '552 Message size exceeds maximum permitted', ['bounced', 'soft', 'MessageTooLarge']],
  [
    'exim greylisting',
    '451 4.7.1 Greylisting in action, please come back later',
    ['deferred', undefined, 'RecipientServerError'],
  ],
  [
    'exim temporary local problem',
    '451 Temporary local problem - please try later',
    ['deferred', undefined, 'RecipientServerError'],
  ],
  ['exim administrative prohibition', '550 Administrative prohibition', ['bounced', 'soft', 'General']],
  // qmail-style code at the end; generic and unknown replies
  ['qmail no mailbox', '550 Sorry, no mailbox here by that name. (#5.1.1)', HARD_NOEMAIL],
  ['bare 550 with unknown words', '550 Requested action not taken', ['bounced', 'undetermined', 'Undetermined']],
  ['5.0.0 with unknown words', '554 5.0.0 Service unavailable', ['bounced', 'undetermined', 'Undetermined']],
  [
    'generic 421',
    '421 Service not available, closing transmission channel',
    ['deferred', undefined, 'RecipientServerError'],
  ],
  [
    '4.4.2 connection dropped',
    '421 4.4.2 mx.example.net Error: timeout exceeded',
    ['deferred', undefined, 'TransientCommunicationFailure'],
  ],
  [
    'too many connections from IP',
    '421 4.7.0 mx.example.net Error: too many connections from 192.0.2.10',
    ['deferred', undefined, 'IPFailure', 'BT'],
  ],
  [
    'user words under policy code stay soft',
    '550 5.7.1 Recipient unknown or not allowed',
    ['bounced', 'soft', 'ContentRejected'],
  ],
];

describe('classifyReply: real-world replies', () => {
  it('has at least 40 rows', () => {
    expect(TABLE.length).to.be.at.least(40);
  });
  for (const [source, raw, [outcome, bounceType, detail, flags]] of TABLE) {
    it(`${source}: ${outcome}${bounceType ? ` ${bounceType}` : ''} ${detail}${flags ? ` [${flags}]` : ''}`, () => {
      const got = classifyReply(parseReply(raw));
      expect(got).to.deep.equal({
        outcome,
        ...(bounceType ? { bounceType } : {}),
        detail,
        blocked: flags === 'B' || flags === 'BT',
        throttle: flags === 'BT',
      });
    });
  }
});

describe('parseReply', () => {
  it('joins a multi-line reply and takes the enhanced code once', () => {
    const r = parseReply('550-5.1.1 first line\r\n550-5.1.1 second\r\n550 5.1.1 third');
    expect(r).to.deep.equal({ code: 550, enhanced: '5.1.1', text: 'first line second third' });
  });
  it('returns null enhanced when the server sends none', () => {
    expect(parseReply('550 Unrouteable address')).to.deep.equal({
      code: 550,
      enhanced: null,
      text: 'Unrouteable address',
    });
  });
  it('ignores an enhanced code whose class disagrees with the reply code', () => {
    expect(parseReply('550 4.7.1 odd').enhanced).to.equal(null);
  });
  it('does not mistake a dotted number in the text for an enhanced code', () => {
    expect(parseReply('421 [TSS04] deferred - 4.16.55.1; see').enhanced).to.equal(null);
  });
  it('reads a bare code line', () => {
    expect(parseReply('250')).to.deep.equal({ code: 250, enhanced: null, text: '' });
  });
  it('gives code 0 for text that is no reply at all', () => {
    const r = parseReply('connection closed');
    expect(r.code).to.equal(0);
    expect(classifyReply(r)).to.deep.include({ outcome: 'deferred', detail: 'Undetermined' });
  });
});

describe('classifyConnectionError', () => {
  const cases: [string, unknown][] = [
    ['refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:25'), { code: 'ECONNREFUSED' })],
    ['timeout', Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' })],
    ['no such host', Object.assign(new Error('getaddrinfo ENOTFOUND mx.invalid'), { code: 'ENOTFOUND' })],
    [
      'tls',
      Object.assign(new Error('unable to verify the first certificate'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
    ],
    ['nodemailer connection', Object.assign(new Error('Greeting never received'), { code: 'ETIMEDOUT' })],
    ['nodemailer tls', Object.assign(new Error('Error initiating TLS'), { code: 'ETLS' })],
  ];
  for (const [name, err] of cases) {
    it(`${name} → deferred TransientCommunicationFailure`, () => {
      expect(classifyConnectionError(err)).to.deep.equal({
        outcome: 'deferred',
        detail: 'TransientCommunicationFailure',
        blocked: false,
        throttle: false,
      });
    });
  }
  it('an unknown failure is deferred Undetermined', () => {
    expect(classifyConnectionError(new Error('boom'))).to.deep.include({ outcome: 'deferred', detail: 'Undetermined' });
    expect(classifyConnectionError('weird')).to.deep.include({ outcome: 'deferred', detail: 'Undetermined' });
  });
});

describe('classifySmtpError', () => {
  it('uses the server reply an SMTP client error carries', () => {
    const err = Object.assign(new Error("Can't send mail"), {
      code: 'EENVELOPE',
      responseCode: 550,
      response: '550 5.1.1 <x@y.example>: Recipient address rejected: User unknown',
    });
    expect(classifySmtpError(err)).to.deep.include({ outcome: 'bounced', bounceType: 'hard', detail: 'NoEmail' });
  });
  it('falls back to the connection failure when there is no reply', () => {
    const err = Object.assign(new Error('Connection closed'), { code: 'ECONNECTION' });
    expect(classifySmtpError(err)).to.deep.include({ outcome: 'deferred', detail: 'TransientCommunicationFailure' });
  });
});
