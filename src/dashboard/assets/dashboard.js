
(function () {
  function openDialogs(root) {
    root.querySelectorAll('dialog[data-modal]').forEach(function (d) {
      if (d.open) d.close();
      if (!d.isConnected) return;
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
  document.addEventListener('click', function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
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
  document.addEventListener('DOMContentLoaded', function () { openDialogs(document); });
  document.addEventListener('htmx:afterSwap', function (event) { openDialogs(event.target); });
})();
