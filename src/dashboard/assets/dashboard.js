
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
})();
