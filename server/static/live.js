// burner's one script: it keeps an inbox page live (spec §5). Every page
// works without it; an inbox then needs a reload to show new mail.
//
// The page follows its inbox's event stream. On each new email, and each
// time the stream (re)connects, it fetches itself and swaps in the
// server-rendered list: the list is always what the server renders, escaped
// by the server. Without EventSource, or once the stream is refused for
// good, it refreshes every 10 seconds.
(function () {
  "use strict";
  var list = document.getElementById("emails");
  if (!list || !list.dataset.events || !window.fetch || !window.DOMParser) {
    return;
  }
  var status = document.getElementById("live");
  var busy = false;
  var again = false;
  var polling = false;

  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (res) {
        // A redirect means the session ended: reload, and the login page shows.
        if (!res.ok || res.redirected) {
          throw new Error("reload");
        }
        return res.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("emails");
        if (!fresh) {
          throw new Error("reload");
        }
        list.replaceWith(document.adoptNode(fresh));
        list = fresh;
      })
      .catch(function () {
        location.reload();
      })
      .finally(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  function poll() {
    if (!polling) {
      polling = true;
      setInterval(refresh, 10000);
    }
  }

  if (!window.EventSource) {
    poll();
    return;
  }
  var events = new EventSource(list.dataset.events);
  events.addEventListener("open", function () {
    if (status && !document.documentElement.dataset.live) {
      status.textContent = "Live: new emails appear as they arrive.";
    }
    document.documentElement.dataset.live = "open";
    // What arrived between the page's rendering and now is in no event:
    // the stream starts at the newest email when it connects.
    refresh();
  });
  events.addEventListener("email", function (ev) {
    var from = "";
    try {
      var e = JSON.parse(ev.data);
      from = e.fromName || e.fromAddress;
    } catch (err) {
      // Only the notice needs the data; the list comes from the server.
    }
    if (status) {
      status.textContent = from ? "New email from " + from + "." : "New email.";
    }
    refresh();
  });
  events.addEventListener("error", function () {
    document.documentElement.dataset.live = "retrying";
    // EventSource retries by itself; CLOSED means it gave up.
    if (events.readyState === EventSource.CLOSED) {
      poll();
    }
  });
})();
