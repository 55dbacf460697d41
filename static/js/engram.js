/* Engram dashboard: keyboard shortcuts on review and cram cards, copy-to-clipboard, and
   focus after htmx swaps. No inline scripts anywhere, so a strict CSP stays possible;
   every page also works without this file (forms post, links navigate). */
(function () {
  "use strict";

  function typing(target) {
    return target.closest && target.closest("input, textarea, select, [contenteditable]");
  }

  /* Shown and enabled: a closed <details> hides everything in it but its own summary (the
     cue editor's summary answers to C while the editor is closed). */
  function visible(element) {
    if (!element || element.disabled || element.getClientRects().length === 0) return false;
    var closed = element.closest("details:not([open])");
    while (closed) {
      var summary = closed.querySelector(":scope > summary");
      if (!summary || !summary.contains(element)) return false;
      closed = closed.parentElement && closed.parentElement.closest("details:not([open])");
    }
    return true;
  }

  /* On a card ([data-hotkeys]): space or enter reveal the answer; then any button with a
     data-key attribute answers to that key (1-4 grade, u undo, ...). "?" anywhere opens
     (or closes) the keyboard help in the footer. */
  var beforeHelp = null;

  /* Closing the help (or the cue editor) by key gives the focus back to where it was, or to
     the card: left on the help's summary, Space and Enter would only open the help again. */
  function giveBack(previous) {
    var target = previous && previous !== document.body && document.body.contains(previous)
      ? previous
      : document.querySelector("[data-autofocus]") || document.getElementById("main");
    if (target) target.focus({ preventScroll: true });
  }

  function closeOnEscape(event) {
    var help = document.getElementById("keyboard-help");
    if (help && help.open) {
      help.open = false;
      giveBack(beforeHelp);
      beforeHelp = null;
      return true;
    }
    var editor = event.target.closest && event.target.closest("details[data-focus-on-open][open]");
    editor = editor || (!typing(event.target) && document.querySelector("details[data-focus-on-open][open]"));
    if (editor) {
      editor.open = false;
      giveBack(null);
      return true;
    }
    /* Any other disclosure the focus is in ("Forget…", "Revoke…", a confirmation): closed,
       the focus back on its summary, as a disclosure widget does. */
    var around = event.target.closest && event.target.closest("details[open]");
    if (around) {
      around.open = false;
      var summary = around.querySelector(":scope > summary");
      if (summary) summary.focus({ preventScroll: true });
      return true;
    }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (event.key === "Escape") {
      if (closeOnEscape(event)) event.preventDefault();
      return;
    }
    if (typing(event.target)) return;
    if (event.key === "?") {
      var help = document.getElementById("keyboard-help");
      if (help) {
        event.preventDefault();
        if (help.open) {
          help.open = false;
          giveBack(beforeHelp);
          beforeHelp = null;
        } else {
          beforeHelp = document.activeElement;
          help.open = true;
          help.querySelector("summary").focus();
          help.scrollIntoView({ block: "nearest" });
        }
      }
      return;
    }
    var card = document.querySelector("[data-hotkeys]");
    if (!card) return;
    var answer = card.querySelector("details.answer");
    if ((event.key === " " || event.key === "Enter") && answer && !answer.open) {
      // A focused summary, button or link handles its own activation.
      if (event.target.closest("summary, button, a")) return;
      event.preventDefault();
      reveal(answer);
      return;
    }
    var key = event.key.length === 1 ? event.key.toLowerCase() : "";
    if (!key) return;
    var buttons = card.querySelectorAll('[data-key="' + key + '"]');
    for (var i = 0; i < buttons.length; i++) {
      if (visible(buttons[i])) {
        event.preventDefault();
        buttons[i].click();
        return;
      }
    }
  });

  /* A <details data-focus-on-open> (the cue editor) puts the caret in its first field as it
     opens, so C and then typing is all it takes; the toggle event does not bubble. */
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.matches || !details.matches("details[data-focus-on-open]") || !details.open) return;
    var field = details.querySelector("input:not([type=hidden]), textarea");
    if (field) {
      field.focus();
      field.select();
    }
  }, true);

  /* The waiting card counts down to the next learning step (the page reloads the card
     itself when it is due, through htmx; without JavaScript, "Check again"). */
  function countdown() {
    var spans = document.querySelectorAll("[data-countdown]");
    for (var i = 0; i < spans.length; i++) {
      var span = spans[i];
      var left = parseInt(span.getAttribute("data-countdown"), 10) - 1;
      if (isNaN(left) || left < 0) continue;
      span.setAttribute("data-countdown", String(left));
      var minutes = Math.floor(left / 60);
      span.textContent = minutes ? minutes + " min " + (left % 60) + " s" : left + " s";
    }
  }
  setInterval(countdown, 1000);

  function reveal(answer) {
    answer.open = true;
    var content = answer.querySelector(".content");
    if (content) content.focus({ preventScroll: false });
  }

  /* Copy buttons: data-copy="#id" copies that element's text. */
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent.trim();
    var done = function () {
      var label = button.getAttribute("data-copied") || "Copied";
      var original = button.textContent;
      button.textContent = label;
      setTimeout(function () { button.textContent = original; }, 2000);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { select(source); });
    } else {
      select(source);
    }
  });

  /* Without the clipboard API (plain http), select the text for Ctrl+C. */
  function select(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  /* A swap that removed the focused control (a page link, a filter, a tab) left the focus
     on the page itself, so a keyboard user started again from the top: it goes to what
     was swapped in instead. */
  function keepFocus(target) {
    var active = document.activeElement;
    if (!target || (active && active !== document.body && document.body.contains(active))) return;
    // An outerHTML swap replaced the target itself: its successor has the same id.
    if (!document.body.contains(target)) target = target.id && document.getElementById(target.id);
    if (!target) return;
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus({ preventScroll: true });
  }

  /* A request htmx could not complete (refused, failed, or the server out of reach) says so
     where messages go, as an alert; before, the page stayed as it was without a word. */
  function requestError(text) {
    var box = document.getElementById("messages");
    if (!box) return;
    clearRequestError();
    var message = document.createElement("p");
    message.className = "message message-error";
    message.setAttribute("role", "alert");
    message.setAttribute("data-request-error", "");
    message.textContent = text;
    box.appendChild(message);
  }

  function clearRequestError() {
    var old = document.querySelectorAll("[data-request-error]");
    for (var i = 0; i < old.length; i++) old[i].remove();
  }

  document.addEventListener("htmx:beforeRequest", clearRequestError);
  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail && event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 403) {
      requestError("That was refused: this page is older than your last sign-in (another tab?). Nothing was saved. Reload the page and try again.");
    } else if (status === 404) {
      requestError("That is no longer there. Reload the page to see what is.");
    } else if (status === 429) {
      requestError("Too many requests: wait a moment and try again.");
    } else if (status >= 500) {
      requestError("Something went wrong on the server (" + status + "). Try again in a moment.");
    } else {
      requestError("That could not be done (" + status + "). Reload the page and try again.");
    }
  });
  document.addEventListener("htmx:sendError", function () {
    requestError("The server could not be reached. Check the connection and try again.");
  });
  document.addEventListener("htmx:timeout", function () {
    requestError("The server took too long to answer. Try again.");
  });

  /* A table or plot wider than its card scrolls inside it (a phone): while it does, it is
     a named region in the tab order, so a keyboard can scroll it (WCAG 2.1.1; axe's
     scrollable-region-focusable). One that fits is left out of the tab order. Only what
     this code marked is unmarked. */
  function regionName(box) {
    var caption = box.querySelector("caption");
    if (caption && caption.textContent.trim()) return caption.textContent.trim();
    var around = box.closest("figure, section, details, .card");
    var heading = around && around.querySelector("h1, h2, h3, h4, summary");
    return heading && heading.textContent.trim() ? heading.textContent.trim() : "Scrollable content";
  }

  function markScrollable() {
    var boxes = document.querySelectorAll(".table-wrap, .plot-scroll");
    for (var i = 0; i < boxes.length; i++) {
      var box = boxes[i];
      var ours = box.hasAttribute("data-scroll-region");
      if (box.hasAttribute("tabindex") && !ours) continue;  // marked in its template
      var scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !ours) {
        box.setAttribute("data-scroll-region", "");
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", regionName(box) + " (scrolls sideways)");
      } else if (!scrolls && ours) {
        box.removeAttribute("data-scroll-region");
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    }
  }

  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(markScrollable, 150);
  });
  document.addEventListener("htmx:afterSettle", markScrollable);
  window.addEventListener("load", markScrollable);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", markScrollable);
  } else {
    markScrollable();
  }

  /* After htmx swaps in a new card, move focus to it so screen readers announce it;
     scroll only when it is out of sight (a token's one-time secret lands at the top of
     the page while the button that made it may be far below). */
  /* What had the focus when htmx swapped the content in. If the focus has moved by the time
     the swap settles (20 ms later, longer on a busy phone), the person already acted in the
     new content (a key, a tap): it stays where they put it. */
  var focusAtSwap = null;
  document.addEventListener("htmx:afterSwap", function () {
    focusAtSwap = document.activeElement;
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    var active = document.activeElement;
    var moved = focusAtSwap !== null && active !== focusAtSwap && active && active !== document.body;
    focusAtSwap = null;
    if (moved) return;
    var focus = document.querySelector("[data-autofocus]");
    if (!focus) {
      keepFocus(event.detail && event.detail.target);
      return;
    }
    focus.focus({ preventScroll: true });
    var box = focus.getBoundingClientRect();
    var height = window.innerHeight || document.documentElement.clientHeight;
    if (box.top < 0 || box.bottom > height) {
      focus.scrollIntoView({ block: "start" });
    }
  });
})();
