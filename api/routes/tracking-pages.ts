// The small HTML pages of the one-click unsubscribe link: a confirmation form (GET) and the
// answers to its POST. Plain HTML, no scripts, no external assets.

export type UnsubscribeState = 'confirm' | 'done' | 'gone' | 'bad_request';

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}' +
  'button{font-size:1rem;padding:.6rem 1.2rem;border:0;border-radius:.3rem;background:#222;color:#fff;cursor:pointer}';

const TEXT: Record<UnsubscribeState, { title: string; body: string }> = {
  confirm: { title: 'Unsubscribe', body: 'Do you want to stop receiving these emails at this address?' },
  done: { title: 'You are unsubscribed', body: 'You will no longer receive these emails at this address.' },
  gone: { title: 'Link expired', body: 'This message no longer exists, so there is nothing to unsubscribe from.' },
  bad_request: { title: 'Unsubscribe', body: 'This request could not be understood. Please use the button below.' },
};

export function unsubscribePage(o: { state: UnsubscribeState; action: string; brand: string }): string {
  const t = TEXT[o.state];
  const form =
    o.state === 'confirm' || o.state === 'bad_request'
      ? `<form method="post" action="${escapeHtml(o.action)}">` +
        '<input type="hidden" name="List-Unsubscribe" value="One-Click">' +
        '<button type="submit">Unsubscribe</button></form>'
      : '';
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<meta name="robots" content="noindex"><title>${escapeHtml(t.title)}</title><style>${STYLE}</style></head>` +
    `<body><h1>${escapeHtml(t.title)}</h1><p>${escapeHtml(t.body)}</p>${form}` +
    `<p><small>Sent with ${escapeHtml(o.brand)}</small></p></body></html>\n`
  );
}
