// The help centre's consent banner: it covers the page until a choice is made, remembered in a cookie.
(function () {
  if (document.cookie.split('; ').some(function (c) { return c.indexOf('consent=') === 0; })) return;
  var banner = document.createElement('div');
  banner.id = 'cookie-banner';
  banner.innerHTML =
    '<div class="box" role="dialog" aria-label="Cookie consent">' +
    '<h2>We value your privacy</h2>' +
    '<p>Tabula Software and our 214 partners use cookies to measure how the help centre is used and to ' +
    'personalise content. You can accept all cookies or keep only the essential ones.</p>' +
    '<button class="accept" id="accept-all">Accept all</button>' +
    '<button class="other" id="essential-only">Essential only</button></div>';
  function choose(value) {
    document.cookie = 'consent=' + value + '; path=/; max-age=31536000';
    banner.remove();
  }
  document.addEventListener('DOMContentLoaded', function () {
    document.body.appendChild(banner);
    document.getElementById('accept-all').addEventListener('click', function () { choose('all'); });
    document.getElementById('essential-only').addEventListener('click', function () { choose('essential'); });
  });
})();
