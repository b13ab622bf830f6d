/* The chat page: sessions over the HTTP API, questions over the websocket /ws/chat/
   (protocol in docs/api.md). No build step; rendering is in render.js. */
"use strict";

(() => {
  const R = KleaRender;
  const L = KleaLayout;
  const $ = (id) => document.getElementById(id);
  const STAGES = {
    guard: "Checking the question…", classify: "Classifying…", generate_queries: "Searching…",
    retrieve: "Searching…", pick_tools: "Searching…", join_tools: "Searching…", answer: "Answering…",
    evaluate: "Evaluating the answer…",
  };
  // current / question: the running turn's answer and question items; asked: its text;
  // started: the server has sent an event of that turn (it was taken)
  const state = { session: null, socket: null, current: null, question: null, asked: "", started: false, attempt: 1,
    running: false, retry: 500, domains: [], opened: false, waiting: false, signingOut: false, showSessions: () => {} };

  function csrf() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  /* The open conversation is remembered per browser tab (sessionStorage): a reload
     reopens it, a fresh visit (a new tab or browser session) starts a new one. */
  const OPEN_KEY = "klea.openSession";
  function remember(id) {
    try {
      if (id === null) sessionStorage.removeItem(OPEN_KEY);
      else sessionStorage.setItem(OPEN_KEY, String(id));
    } catch (error) { /* storage disabled: every visit starts a new conversation */ }
  }
  function remembered() {
    try { return Number(sessionStorage.getItem(OPEN_KEY)) || null; } catch (error) { return null; }
  }

  async function api(path, options = {}) {
    const headers = { "Content-Type": "application/json", "X-CSRFToken": csrf() };
    const response = await fetch(path, { credentials: "same-origin", ...options, headers });
    if (response.status === 401) { window.location.href = "/accounts/login/?next=/"; return null; }
    if (response.status === 204) return {};
    const body = await response.json();
    if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
    return body;
  }

  /* --- sessions ------------------------------------------------------------------- */
  async function loadSessions() {
    const body = await api("/api/sessions");
    if (!body) return;
    const list = $("session-list");
    list.replaceChildren();
    for (const session of body.sessions) list.append(sessionItem(session));
    if (!state.opened) {  // on page load: the conversation this tab had open, if any
      state.opened = true;
      const id = remembered();
      if (body.sessions.some((session) => session.id === id) && state.session === null && !state.running) {
        openSession(id);
      } else {
        remember(null);
      }
    }
  }

  /* A hint in an empty conversation: each domain with its description and its example
     questions (Domain.examples), which ask themselves when clicked. */
  function showHint() {
    const empty = !$("conversation").childElementCount;
    const hint = $("empty-hint");
    hint.hidden = !empty || !state.domains.length;
    if (hint.hidden) return;
    const items = state.domains.map((domain) => {
      const examples = domain.examples.map((question) => {
        const button = R.el("button", { type: "button", class: "example", text: question });
        button.addEventListener("click", () => {
          $("question").value = question;
          submit();
        });
        return R.el("li", {}, button);
      });
      return R.el("li", { class: "hint-domain" },
        R.el("strong", { text: domain.name }), R.el("span", { text: domain.description }),
        ...(examples.length ? [R.el("ul", { class: "examples" }, ...examples)] : []));
    });
    hint.replaceChildren(R.el("p", { text: "Ask a question about:" }), R.el("ul", {}, ...items));
  }

  function sessionItem(session) {
    const item = R.el("li", { class: session.id === state.session ? "current" : "" });
    const name = session.title || `Conversation ${session.id}`;
    const open = R.el("button", { type: "button", class: "open", text: name });
    if (session.id === state.session) open.setAttribute("aria-current", "true");
    open.addEventListener("click", () => openSession(session.id));
    const rename = R.el("button", { type: "button", class: "small", text: "Rename",
      "aria-label": `Rename ${name}` });
    rename.addEventListener("click", async () => {
      const title = window.prompt("New title", session.title);
      if (title === null) return;
      await api(`/api/sessions/${session.id}`, { method: "PATCH", body: JSON.stringify({ title }) });
      loadSessions();
    });
    const remove = R.el("button", { type: "button", class: "small danger", text: "Delete",
      "aria-label": `Delete ${name}` });
    remove.addEventListener("click", async () => {
      if (!window.confirm("Delete this conversation?")) return;
      await api(`/api/sessions/${session.id}`, { method: "DELETE" });
      if (state.session === session.id) newSession();
      loadSessions();
    });
    item.append(open, R.el("span", { class: "actions" }, rename, remove));
    return item;
  }

  async function openSession(id) {
    if (state.running) return;
    const body = await api(`/api/sessions/${id}/messages`);
    if (!body) return;
    state.session = id;
    remember(id);
    const conversation = $("conversation");
    conversation.replaceChildren();
    for (const message of body.messages) conversation.append(R.fill(R.message(message.role), message));
    showHint();
    state.showSessions(false);
    L.scrollToEnd($("thread"));
    loadSessions();
    focusQuestion();
  }

  function newSession() {
    if (state.running) return;
    state.session = null;
    remember(null);
    $("conversation").replaceChildren();
    showHint();
    state.showSessions(false);
    loadSessions();
    focusQuestion();
  }

  /* --- domains -------------------------------------------------------------------- */
  async function loadDomains() {
    const body = await api("/api/domains");
    if (!body) return;
    const box = $("domain-options");
    const ticked = new Set(pickedDomains());  // kept when the list is read again
    box.replaceChildren();
    if (!body.domains.length) box.append(R.el("p", { text: "No domain is available to you yet." }));
    state.domains = body.domains;
    showHint();
    for (const domain of body.domains) {
      const id = `domain-${domain.name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
      const input = R.el("input", { type: "checkbox", id, value: domain.name });
      input.checked = ticked.has(domain.name);
      const label = R.el("label", { for: id, title: domain.description, text: domain.name });
      box.append(R.el("span", { class: "domain" }, input, label));
    }
    showDomainsNote();
  }

  /* The note beside the domains says what a question is asked of now: it read "none
     ticked: chosen for you" with domains ticked (new-user trial). */
  function showDomainsNote() {
    const count = pickedDomains().length;
    $("domains-note").textContent = count === 0 ? "none ticked: chosen for you"
      : count === 1 ? "only the ticked domain is asked" : `only the ${count} ticked domains are asked`;
  }

  function pickedDomains() {
    return [...document.querySelectorAll("#domain-options input:checked")].map((input) => input.value);
  }

  /* --- websocket ------------------------------------------------------------------ */
  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${window.location.host}/ws/chat/`);
    state.socket = socket;
    socket.addEventListener("open", () => {
      state.retry = 500;
      $("connection").textContent = "";
      if (state.waiting) {  // a question asked while connecting goes now
        state.waiting = false;
        submit();
      }
    });
    socket.addEventListener("message", (message) => onEvent(JSON.parse(message.data)));
    socket.addEventListener("close", (closing) => {
      if (state.running && state.started) finish("The connection was lost; the answer is incomplete.");
      else if (state.running) giveBack("The connection was lost before the answer began.");
      // Signed out elsewhere: to the sign-in page. Signing out here closes the socket too
      // (4401) while the form's own answer is on its way: going to the sign-in page then
      // beat it and lost its "You are signed out." (new-user trial).
      if (closing.code === 4401) {
        if (!state.signingOut) window.location.href = "/accounts/login/?next=/";
        return;
      }
      $("connection").textContent = "Reconnecting…";
      setTimeout(connect, state.retry);
      state.retry = Math.min(state.retry * 2, 10000);
    });
  }

  function ask(text) {
    const frame = { type: "query", session: state.session, text };
    const domains = pickedDomains();
    if (domains.length) frame.domains = domains;
    const conversation = $("conversation");
    state.question = R.fill(R.message("user"), { content: text });
    conversation.append(state.question);
    state.asked = text;
    state.started = false;
    state.current = R.message("assistant");
    state.current.classList.add("streaming");
    conversation.append(state.current);
    showHint();
    state.attempt = 1;
    setRunning(true);
    showStage("Starting…");
    state.socket.send(JSON.stringify(frame));
    L.scrollToEnd($("thread"));
  }

  function setRunning(running) {
    state.running = running;
    $("send").disabled = running;
    $("cancel").hidden = !running;
    $("conversation").setAttribute("aria-busy", String(running));
    if (!running) $("stage").hidden = true;
  }

  function showStage(text) {
    $("stage").hidden = false;
    $("stage-text").textContent = text;
  }

  function finish(errorText) {
    if (state.current) {
      state.current.classList.remove("streaming");
      if (errorText) R.addError(state.current, errorText);
    }
    setRunning(false);
    loadSessions();
  }

  function onEvent(event) {
    const item = state.current;
    if (!event.refused) state.started = true;
    switch (event.type) {
      case "session":
        state.session = event.session;
        remember(event.session);
        loadSessions();
        break;
      case "stage":
        if (event.phase === "start" && STAGES[event.node]) showStage(STAGES[event.node]);
        break;
      case "token":
        if (!item) break;
        if (event.attempt !== state.attempt) {  // a new attempt replaces the text so far
          R.answerText(item, "");
          state.attempt = event.attempt;
        }
        R.appendText(item, event.text);
        break;
      case "tool":
        if (item) item.querySelector(".tools").append(R.el("li", { class: "tool", text: R.toolLine(event) }));
        break;
      case "references":
        if (item && event.references.length) R.setReferences(item, event.references);
        break;
      case "answer":
        if (!item) break;
        R.answerText(item, event.text);  // [n] markers become buttons that open reference n
        if (event.warnings.length) item.querySelector(".warnings-slot").replaceChildren(R.warnings(event.warnings));
        break;
      case "error":
        if (event.refused) refused(event);
        else if (item && state.running) {
          R.addError(item, event.code === "interrupted" ? "Stopped: the answer is incomplete."
            : `${event.message} (${event.code})`);
        }
        else $("connection").textContent = R.visible(`${event.message} (${event.code})`);
        break;
      case "done":
        finish();
        state.current = null;
        focusQuestion();
        break;
      default:
        break;
    }
  }

  /* A protocol error names the frame it refuses (docs/api.md, "Protocol errors"). A
     refused query runs no turn, so no "done" follows: the page stops waiting, says why on
     the turn and gives the question back to be edited. This page sends only small query
     and cancel frames, so an unreadable frame ("frame": larger than
     KLEA_WS_MAX_FRAME_BYTES) is its query. A refused cancel needs nothing: the turn
     already ended, and its "done" came or comes. */
  function refused(event) {
    if (event.refused === "cancel") return;
    const why = `${event.message} (${event.code})`;
    if (!state.running || !state.current) {
      $("connection").textContent = R.visible(why);
      return;
    }
    const gone = event.code === "not_found";  // the conversation was deleted (another tab)
    if (gone) {
      state.session = null;
      remember(null);
    }
    giveBack(`Not asked: ${why}.${gone ? " Sending it again starts a new conversation." : ""}`);
    if (event.code === "unknown_domain") loadDomains();  // a ticked domain is gone or no longer yours
  }

  /* The running question got no answer (`why` is said on its turn): the page stops
     waiting and puts the question back in the box to be edited or sent again. */
  function giveBack(why) {
    for (const item of [state.question, state.current]) item.classList.add("refused");
    finish(why);
    state.current = null;
    const box = $("question");
    if (!box.value.trim()) {  // back in the box, unless a new question is being typed there
      box.value = state.asked;
      L.fit(box);
    }
    showQuestionHint(lengthHint());
    focusQuestion();
  }

  /* --- the form ------------------------------------------------------------------- */
  function submit(formEvent) {
    if (formEvent) formEvent.preventDefault();
    if (state.running) return;
    const box = $("question");
    const text = serverTrim(box.value);
    // nothing visible (spaces, new lines, zero-width characters; as domains/text.py blank()): say so, send nothing
    if (!/[^\s\p{Cc}\p{Cf}\p{Z}]/u.test(text)) {
      showQuestionHint("Type a question first: there is nothing to send.");
      box.focus();
      return;
    }
    // over the limit: the server would refuse it (too_large) after showing a doomed turn
    // (new-user trial); said here instead, the text kept in the box to be shortened
    const tooLong = lengthHint();
    if (tooLong) {
      showQuestionHint(tooLong);
      box.focus();
      return;
    }
    if (!state.socket || state.socket.readyState !== WebSocket.OPEN) {  // kept in the box meanwhile
      state.waiting = true;
      $("connection").textContent = "Connecting… the question goes as soon as the connection is up.";
      return;
    }
    box.value = "";
    showQuestionHint("");  // a length hint of the text sent is stale now
    L.fit(box);
    ask(text);
  }

  /* The white space Python's str.strip() removes (chat/parsing.py check_question), not
     String.trim()'s: that one also strips U+FEFF and keeps U+001C-U+001F and U+0085, so a
     question at the limit was judged differently here and on the server (breaker). */
  const SERVER_SPACE = "[\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+";
  const SERVER_SPACE_ENDS = new RegExp(`^${SERVER_SPACE}|${SERVER_SPACE}$`, "g");
  function serverTrim(text) {
    return text.replace(SERVER_SPACE_ENDS, "");
  }

  /* Said while typing, and Send sends nothing while it is said (the text is never cut);
     the server's too_large stays the rule for every client. Characters are code points
     of the trimmed text, as the server counts them. */
  function lengthHint() {
    const box = $("question");
    const limit = Number(box.dataset.maxChars);
    const count = [...serverTrim(box.value)].length;
    if (!limit || count <= limit) return "";
    const n = (value) => value.toLocaleString("en-US");
    return `${n(count)} characters: a question may have ${n(limit)} at most; shorten it by ${n(count - limit)}.`;
  }

  /* After opening a conversation, an answer or a refusal the box takes the focus, for
     the next question; not on a touch screen, where that opens the on-screen keyboard
     over what the user was about to read (their tap on the box does it). */
  function focusQuestion() {
    if (window.matchMedia("(pointer: fine)").matches) $("question").focus();
  }

  function showQuestionHint(text) {
    $("question-hint").textContent = text;
    $("question").setAttribute("aria-invalid", text ? "true" : "false");
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("ask").addEventListener("submit", submit);
    $("domain-options").addEventListener("change", showDomainsNote);
    $("sign-out")?.addEventListener("submit", () => { state.signingOut = true; });
    $("question").addEventListener("keydown", (key) => {
      if (key.key === "Enter" && !key.shiftKey && !key.isComposing) submit(key);
    });
    $("question").addEventListener("input", () => {
      showQuestionHint(lengthHint());
      L.fit($("question"));
    });
    state.showSessions = L.drawer($("sessions-toggle"), $("sessions"));
    L.follow($("thread"), $("conversation"), () => state.current && state.current.querySelector(".text"),
      () => state.running);
    $("cancel").addEventListener("click", () => {
      if (state.running && state.socket) state.socket.send(JSON.stringify({ type: "cancel" }));
    });
    $("new-session").addEventListener("click", newSession);
    loadDomains();
    loadSessions();
    connect();
  });
})();
