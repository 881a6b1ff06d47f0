// Renders the API document named by the page's data-spec attribute with
// the vendored Redoc (redoc.standalone.js), and marks the page once Redoc
// has loaded it: data-redoc="ready", or "error" with the message.
(function () {
  'use strict';
  var el = document.getElementById('redoc');
  var nav = document.querySelector('nav.families');
  Redoc.init(el.getAttribute('data-spec'), {
    scrollYOffset: nav ? nav.offsetHeight : 0,
    expandResponses: '200,201,202',
    jsonSamplesExpandLevel: 3,
    requiredPropsFirst: true,
    showWebhookVerb: true,
    hideLoading: false,
    theme: {
      colors: { primary: { main: '#1f5f8b' } },
      sidebar: { width: '280px' },
      typography: { fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif', headings: { fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif' } }
    }
  }, el, function (err) {
    if (err) {
      document.body.setAttribute('data-redoc', 'error');
      document.body.setAttribute('data-redoc-error', String(err));
      return;
    }
    document.body.setAttribute('data-redoc', 'ready');
  });
})();
