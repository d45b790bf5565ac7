
(function () {
  function openDialogs(root) {
    root.querySelectorAll('dialog[data-modal]').forEach(function (d) {
      if (!d.isConnected || d.hasAttribute('data-wired')) return;
      d.setAttribute('data-wired', '');
      // A dialog the server sent open (the no-JavaScript path, or a link opened in a new tab) becomes
      // modal. Dropping the attribute rather than calling close(): close() queues a close event that
      // would reach the listener below and remove the dialog just shown.
      if (d.open) d.removeAttribute('open');
      d.showModal();
      var focus = d.querySelector('[autofocus]') || d.querySelector('input:not([type=hidden]), select, button, a[href]');
      if (focus) focus.focus();
      d.addEventListener('cancel', function (event) {
        if (d.hasAttribute('data-confirm-close')) {
          event.preventDefault();
          var confirm = d.querySelector('details.close-confirm');
          if (confirm) { confirm.open = true; var yes = confirm.querySelector('a'); if (yes) yes.focus(); }
        }
      });
      d.addEventListener('close', function () { if (!d.hasAttribute('data-confirm-close')) d.remove(); });
    });
  }
  /** A table's scroll box that does scroll can be reached with the keyboard (to scroll it by arrows). */
  function focusableScrollers(root) {
    root.querySelectorAll('.table-scroll:not([tabindex])').forEach(function (box) {
      if (box.scrollWidth <= box.clientWidth) return;
      box.setAttribute('tabindex', '0');
      var caption = box.querySelector('caption');
      box.setAttribute('role', 'region');
      box.setAttribute('aria-label', caption ? caption.textContent.trim() : 'Table');
    });
  }
  /** An open menu (the page menu, the account menu) closes on a click elsewhere or on Escape. */
  function closeMenus(except) {
    document.querySelectorAll('details.menu[open]').forEach(function (menu) {
      if (menu !== except) menu.open = false;
    });
  }
  document.addEventListener('keydown', function (event) {
    if (event.key !== 'Escape') return;
    var open = document.querySelector('details.menu[open]');
    if (!open) return;
    closeMenus(null);
    var summary = open.querySelector('summary');
    if (summary) summary.focus();
  });
  document.addEventListener('click', function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    closeMenus(target.closest('details.menu'));
    var close = target.closest('[data-close]');
    if (close) {
      var dialog = close.closest('dialog');
      if (dialog) { event.preventDefault(); dialog.close(); }
      return;
    }
    var copy = target.closest('[data-copy]');
    if (copy) {
      var input = document.querySelector(copy.getAttribute('data-copy'));
      var note = copy.parentElement && copy.parentElement.querySelector('.copied');
      if (!input) return;
      input.select();
      var done = function () { if (note) note.textContent = 'Copied.'; };
      if (navigator.clipboard) navigator.clipboard.writeText(input.value).then(done, function () { document.execCommand('copy'); done(); });
      else { document.execCommand('copy'); done(); }
    }
  });
  document.addEventListener('change', function (event) {
    var scope = event.target;
    if (!(scope instanceof HTMLSelectElement) || scope.id !== 'key-scope') return;
    if (scope.value === 'agent') {
      var endusers = scope.form && scope.form.querySelector('input[value="endusers"]');
      if (endusers) endusers.checked = false;
    }
  });
  document.addEventListener('DOMContentLoaded', function () { openDialogs(document); focusableScrollers(document); });
  document.addEventListener('htmx:afterSwap', function (event) { openDialogs(event.target); focusableScrollers(event.target); });

  /* ---- The inbox: live updates, the thread at its newest, Enter sends ---- */
  /** Every live part of the page reads itself again (hx-trigger "inbox-refresh from:body"). */
  function refreshLive() { if (window.htmx) window.htmx.trigger(document.body, 'inbox-refresh'); }
  var opened = [];
  // A stream opened again (the browser's own retry, or the SSE extension's) may have missed
  // changes: the page catches up. A stream whose session ended reloads the page (to sign in).
  document.addEventListener('htmx:sseOpen', function (event) {
    var source = event.detail && event.detail.source;
    if (source && !source.parleyWired) {
      source.parleyWired = true;
      source.addEventListener('signedout', function () { window.location.reload(); });
    }
    if (opened.indexOf(event.target) >= 0) refreshLive();
    else opened.push(event.target);
  });
  // No server-sent events in this browser: the live parts are read again every 5 seconds instead.
  if (typeof window.EventSource === 'undefined') {
    setInterval(function () { if (document.querySelector('[data-live-stream]')) refreshLive(); }, 5000);
  }
  function threadsAtNewest(root) {
    var boxes = root.querySelectorAll ? root.querySelectorAll('.thread-scroll') : [];
    if (root.classList && root.classList.contains('thread-scroll')) boxes = [root];
    for (var i = 0; i < boxes.length; i++) boxes[i].scrollTop = boxes[i].scrollHeight;
  }
  document.addEventListener('DOMContentLoaded', function () { threadsAtNewest(document); });
  document.addEventListener('htmx:afterSettle', function (event) {
    var elt = event.detail && event.detail.elt;
    if (!elt) return;
    threadsAtNewest(elt);
    // After a reply is sent, the new (empty) box has the focus again.
    if (elt.id === 'inbox-composer' && event.detail.requestConfig && event.detail.requestConfig.verb === 'post') {
      var box = document.getElementById('reply') || document.getElementById('template');
      if (box) box.focus();
    }
  });
  // Enter sends the reply; Shift+Enter is a new line (as is Enter while composing with an IME).
  document.addEventListener('keydown', function (event) {
    var box = event.target;
    if (!(box instanceof HTMLTextAreaElement) || !box.hasAttribute('data-enter-sends')) return;
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    if (box.value.trim() && box.form) box.form.requestSubmit();
  });
})();
