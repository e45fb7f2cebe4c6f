// The console's only script (served from /console/assets/, CSP script-src 'self'). Every page
// works without it; it adds:
// - local times: each <time datetime> shows the viewer's time zone, UTC stays in the title;
// - copy buttons: <button data-copy="#id" hidden> copies the text of #id (shown only with script);
// - live blocks: <div data-live="/path" data-every="5"> is replaced by the HTML at /path every 5 s
//   (a running broadcast's progress); when the answer's x-broadcast-status says it ended, the
//   page reloads once to show its final state;
// - live preview: a form with data-preview submits itself through its button[data-preview-button]
//   (into the preview frame) half a second after the last keystroke.
'use strict';
(function () {
  // This year's dates without the year; the zone's name is in the title beside UTC.
  var options = { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' };
  var thisYear = new Intl.DateTimeFormat(undefined, options);
  var otherYear = new Intl.DateTimeFormat(undefined, Object.assign({ year: 'numeric' }, options));
  var zone = new Intl.DateTimeFormat(undefined, { timeZoneName: 'long' });
  var now = new Date();
  document.querySelectorAll('time[datetime]').forEach(function (t) {
    var d = new Date(t.getAttribute('datetime'));
    if (isNaN(d.getTime())) return;
    var name = zone.formatToParts(d).filter(function (p) {
      return p.type === 'timeZoneName';
    });
    t.title =
      d.toISOString().slice(0, 19).replace('T', ' ') +
      ' UTC' +
      (name.length ? ' (shown in ' + name[0].value + ')' : '');
    t.textContent = (d.getFullYear() === now.getFullYear() ? thisYear : otherYear).format(d);
  });

  document.querySelectorAll('[data-live]').forEach(function (el) {
    var every = (Number(el.getAttribute('data-every')) || 5) * 1000;
    var timer = setInterval(function () {
      fetch(el.getAttribute('data-live'), { credentials: 'same-origin' })
        .then(function (r) {
          var status = r.headers.get('x-broadcast-status');
          if (!r.ok || (status && status !== 'sending' && status !== 'scheduled')) {
            clearInterval(timer);
            if (r.ok) location.reload();
            return null;
          }
          return r.text();
        })
        .then(function (text) {
          if (typeof text === 'string') el.innerHTML = text;
        })
        .catch(function () {
          clearInterval(timer);
        });
    }, every);
  });

  document.querySelectorAll('form[data-preview]').forEach(function (form) {
    var button = form.querySelector('button[data-preview-button]');
    if (!button || !form.requestSubmit) return;
    var pending = null;
    form.addEventListener('input', function () {
      clearTimeout(pending);
      pending = setTimeout(function () {
        form.requestSubmit(button);
      }, 500);
    });
  });

  document.querySelectorAll('button[data-copy]').forEach(function (b) {
    var target = document.querySelector(b.getAttribute('data-copy'));
    if (!target || !navigator.clipboard) return;
    b.hidden = false;
    b.addEventListener('click', function () {
      navigator.clipboard.writeText(target.textContent.trim()).then(function () {
        var label = b.textContent;
        b.textContent = 'Copied';
        setTimeout(function () {
          b.textContent = label;
        }, 1500);
      });
    });
  });
})();
